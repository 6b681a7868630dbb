#!/usr/bin/env bash
# Fails when a folder includes what DESIGN.md's dependency rules forbid.
set -u
root=${1:?usage: check_layering.sh REPO_ROOT}
cd "$root" || exit 2
status=0
check() {  # check DIRS PATTERN WHY
  local dirs=$1 pattern=$2 why=$3 hits
  hits=$(grep -rnE "$pattern" $dirs --include='*.h' --include='*.cpp' --include='*.inc' 2>/dev/null)
  if [ -n "$hits" ]; then
    printf 'layering violation: %s\n%s\n' "$why" "$hits"
    status=1
  fi
}
check "ops runtime models" '#include *[<"](mlir|llvm|llvm-c)/' "ops/, runtime/ and models/ must not include MLIR or LLVM"
check "graph" '#include *"(codegen|runtime|models)/' "graph/ must not include codegen/, runtime/ or models/"
check "ops" '#include *"(runtime|models|graph|codegen|tools)/' "ops/ depends on nothing else in strata"
check "runtime" '#include *"(models|graph|codegen|tools)/' "runtime/ may include only ops/"
check "codegen" '#include *"(runtime|models|tools)/' "codegen/ must not include runtime/, models/ or tools/"
hits=$(grep -rnE '#include *"ops/' codegen --include='*.h' --include='*.cpp' 2>/dev/null | grep -vE '"ops/(abi|error|graph_def|row_forms)\.h"')
if [ -n "$hits" ]; then
  printf 'layering violation: %s\n%s\n' "codegen/ may include only ops/abi.h (the kernel ABI), ops/row_forms.h (the fused elementwise kernels' operand forms), ops/graph_def.h (the plan it annotates) and ops/error.h from ops/" "$hits"
  status=1
fi
[ $status -eq 0 ] && echo "layering ok"
exit $status
