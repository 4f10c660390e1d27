#!/usr/bin/env python3
"""libptq.so exports exactly the public API: every function include/ptq/*.h
declares (each marked PTQ_API) and nothing else: no kernels (ptq_k_*), no
backend or op-table internals, nothing without the ptq_ prefix. Also its
soname (libptq.so.0) and that the ptq command links it. Run by ctest (label
oracle) with PTQ_BUILD_DIR and PTQ_SOURCE_DIR set."""
import glob
import os
import re
import shutil
import subprocess
import sys

from ptqtest import PTQ, SRC, check, finish

BUILD = os.environ.get("PTQ_BUILD_DIR", "build")
LIB = os.path.join(BUILD, "libptq.so")


def declared():
    """(names marked PTQ_API, names declared without it) in the public headers."""
    headers = glob.glob(os.path.join(SRC, "include", "ptq", "*.h"))
    headers += glob.glob(os.path.join(BUILD, "include", "ptq", "*.h"))  # the generated version.h
    marked, unmarked = set(), set()
    decl = re.compile(r"^(PTQ_API\s+)?[A-Za-z_][\w \*]*?\b(ptq_\w+)\s*\(", re.M)
    for h in headers:
        text = re.sub(r"/\*.*?\*/", "", open(h).read(), flags=re.S)
        for m in decl.finditer(text):
            line = text[m.start():text.index("\n", m.start())]
            if line.startswith(("typedef", "#", "struct", "enum")):
                continue
            (marked if m.group(1) else unmarked).add(m.group(2))
    return marked, unmarked


def internal():
    """Functions the library's internal headers (runtime/backend.h, kernels/*.h, ...) declare."""
    names = set()
    for h in glob.glob(os.path.join(SRC, "*", "**", "*.h"), recursive=True):
        if os.sep + "include" + os.sep in h or os.sep + "tests" + os.sep in h or os.sep + "." in h:
            continue
        text = re.sub(r"/\*.*?\*/", "", open(h).read(), flags=re.S)
        names |= set(re.findall(r"^[A-Za-z_][\w \*]*?\b(ptq_\w+)\s*\(", text, flags=re.M))
    return names


def main():
    if not shutil.which("nm") or not os.path.exists(LIB):
        print(f"skipped: no nm or no {LIB}")
        return 77
    out = subprocess.run(["nm", "-D", "--defined-only", LIB], capture_output=True, text=True, check=True).stdout
    exported = {line.split()[-1].split("@")[0] for line in out.splitlines() if line.strip()}
    marked, unmarked = declared()
    print(f"{len(exported)} exported symbols, {len(marked)} PTQ_API functions declared")
    check("public functions are all marked PTQ_API", not unmarked, ", ".join(sorted(unmarked)))
    stray = sorted(s for s in exported if s not in marked)
    check("exports only PTQ_API functions", not stray, f"{len(stray)}: " + ", ".join(stray[:20]))
    hidden = internal()
    leaked = sorted(s for s in exported if s in hidden or s.startswith(("ptq_k_", "ptq_backend")) or
                    not s.startswith("ptq_"))
    check(f"none of {len(hidden)} internal functions or unprefixed symbols", not leaked and len(hidden) > 100,
          ", ".join(leaked[:20]))
    missing = sorted(marked - exported)
    check("every PTQ_API function is exported", not missing, ", ".join(missing))

    dyn = subprocess.run(["objdump", "-p", LIB], capture_output=True, text=True).stdout
    soname = re.search(r"SONAME\s+(\S+)", dyn)
    check("soname libptq.so.0", soname is not None and soname.group(1) == "libptq.so.0",
          soname.group(1) if soname else "none")
    exe = subprocess.run(["objdump", "-p", PTQ], capture_output=True, text=True).stdout
    check("ptq links libptq.so.0", re.search(r"NEEDED\s+libptq\.so\.0\b", exe) is not None)
    return finish("exported_symbols_test")


if __name__ == "__main__":
    sys.exit(main())
