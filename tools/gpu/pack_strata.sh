#!/bin/bash
# Packs a Debian-built strata (compiler and runtime) for a GPU machine that
# has neither LLVM nor Debian's libraries: the stripped binary and every
# shared library it loads except glibc's, xz-compressed into two parts,
# each under the 64 MiB the device tool carries in one call (libLLVM alone
# in the first). docs/benchmarks.md has the first-run figures.
#
#   tools/gpu/pack_strata.sh [BINARY [OUT_DIR]]     (build/bin/strata, .gpu)
#
# writes OUT_DIR/strata-a.tar.xz and OUT_DIR/strata-b.tar.xz. On the GPU
# machine, unpack both into one folder DIR (`tar xJf PART -C DIR`), then
#
#   LD_LIBRARY_PATH=DIR/lib DIR/strata run MODEL --backend cuda ...
set -euo pipefail
bin=${1:-build/bin/strata}
out=${2:-.gpu}
limit=$((60 * 1024 * 1024))
[ -x "$bin" ] && [ -s "$bin" ] || { echo "pack_strata.sh: $bin is not an executable (build it first)" >&2; exit 1; }
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/a/lib" "$stage/b/lib" "$out"
strip -o "$stage/b/strata" "$bin"
# glibc's own libraries and its loader come from the GPU machine.
ldd "$bin" | awk '$2 == "=>" && $3 ~ /^\// {print $3}' |
  grep -Ev '/(libc|libm|libdl|libpthread|librt)\.so' |
  while read -r lib; do
    case "$(basename "$lib")" in
      libLLVM*) cp -L "$lib" "$stage/a/lib/" ;;
      *) cp -L "$lib" "$stage/b/lib/" ;;
    esac
  done
for part in a b; do
  tar cf - -C "$stage/$part" . | xz -T0 > "$out/strata-$part.tar.xz"
  size=$(stat -c %s "$out/strata-$part.tar.xz")
  echo "$out/strata-$part.tar.xz: $((size / 1024 / 1024)) MiB"
  [ "$size" -le "$limit" ] || { echo "pack_strata.sh: $out/strata-$part.tar.xz is over 60 MiB" >&2; exit 1; }
done
