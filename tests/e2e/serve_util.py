"""Starting a `strata serve` (or `strata-gpu serve`) for the serving tests."""
import re
import subprocess
import sys
import threading


def start_server(argv):
    """Runs `argv` (a serve command with --port 0) and returns (process, url,
    log) once the server prints the URL it listens on. Its stderr keeps
    draining into `log` (a list of lines) so the server never blocks on it;
    the tests show its tail when a check fails. Exits naming the command's
    output when it ends without listening."""
    proc = subprocess.Popen(argv, stderr=subprocess.PIPE, text=True)
    log = []
    for line in proc.stderr:
        log.append(line)
        m = re.search(r"strata serve: (http://\S+)", line)
        if m:
            threading.Thread(target=lambda: log.extend(proc.stderr), daemon=True).start()
            return proc, m.group(1), log
    proc.kill()
    sys.exit(f"{' '.join(argv[:3])} did not start:\n" + "".join(log))
