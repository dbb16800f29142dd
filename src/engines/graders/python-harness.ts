// Runs a python grader's grade(sample, item) for src/engines/graders/python.ts. Reads
// {"source", "sample", "item"} on stdin and writes {"reward"} or {"error", "details"} to fd 3
// (stdout and stderr belong to the grader's own prints). Limits and guards come first, before any
// grader code runs: memory (RLIMIT_AS), file size, no core dumps, and an audit hook that refuses
// writes outside the working directory (a fresh temp dir), sockets, subprocesses and ctypes.
// Kept in a TypeScript string so the built server (dist/) carries it; run with python3 -c.
export const PYTHON_HARNESS = String.raw`import json
import math
import os
import resource
import sys
import traceback

mem_bytes, fsize_bytes = int(sys.argv[1]), int(sys.argv[2])
resource.setrlimit(resource.RLIMIT_AS, (mem_bytes, mem_bytes))
resource.setrlimit(resource.RLIMIT_FSIZE, (fsize_bytes, fsize_bytes))
resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

result = os.fdopen(3, "w")
request = json.load(sys.stdin)
workdir = os.path.realpath(os.getcwd())
WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC
PATH_EVENTS = {"os.remove", "os.rename", "os.rmdir", "os.mkdir", "os.chmod", "os.chown", "os.link", "os.symlink", "os.truncate", "os.utime", "shutil.rmtree"}
FORBIDDEN = {"subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork", "os.forkpty", "os.kill", "os.killpg", "ctypes.dlopen", "ctypes.dlsym", "ctypes.cdata", "sys.addaudithook", "pty.spawn"}


def inside(path):
    if isinstance(path, int):
        return path > 3  # descriptors the grader opened itself (0-3 are the harness's)
    p = os.fsdecode(path)
    real = os.path.realpath(p if os.path.isabs(p) else os.path.join(workdir, p))
    return real == workdir or real.startswith(workdir + os.sep)


def audit(event, args):
    if event == "open":
        path, mode, flags = args
        writes = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (isinstance(flags, int) and flags & WRITE_FLAGS)
        if writes and not inside(path):
            raise PermissionError(f"writing outside the grader's temporary directory is not allowed: {path!r}")
    elif event in PATH_EVENTS:
        if args and not all(inside(a) for a in args[:2] if isinstance(a, (str, bytes, int))):
            raise PermissionError(f"{event} outside the grader's temporary directory is not allowed")
    elif event.startswith("socket."):
        raise PermissionError("network access is disabled in python graders")
    elif event in FORBIDDEN:
        raise PermissionError(f"{event} is not allowed in python graders")


def answer(obj):
    result.write(json.dumps(obj))
    result.flush()


source = request["source"]
try:
    code = compile(source, "grader.py", "exec")
except SyntaxError:
    answer({"error": "syntax", "details": "".join(traceback.format_exc(limit=0)).strip()})
    sys.exit(0)

sys.addaudithook(audit)
namespace = {"__name__": "grader"}
try:
    exec(code, namespace)
    grade = namespace.get("grade")
    if not callable(grade):
        raise NameError("the source must define a function grade(sample, item)")
    reward = grade(request["sample"], request["item"])
    if isinstance(reward, bool) or not isinstance(reward, (int, float)):
        raise TypeError(f"grade() must return a number, got {type(reward).__name__}")
    reward = float(reward)
    if not math.isfinite(reward):
        raise ValueError(f"grade() returned {reward}, not a finite number")
    answer({"reward": reward})
except MemoryError:
    answer({"error": "memory", "details": "MemoryError: the grader used more memory than it is allowed"})
except BaseException:
    lines = traceback.format_exc().splitlines()
    # Drop the harness's own frame: the trace starts in the grader's code.
    answer({"error": "runtime", "details": "\n".join(l for l in lines if 'File "<string>"' not in l)[-4000:]})
`;
