"""Fails, listing them, when lines of the ```mlir examples in the op docs
(argv[1], OctetOps.md) are missing from the examples test (argv[2])."""
import re
import sys

docs = open(sys.argv[1]).read()
test = {line.strip() for line in open(sys.argv[2])}
missing = [line.strip()
           for block in re.findall(r"```mlir\n(.*?)```", docs, re.S)
           for line in block.splitlines()
           if line.strip() and line.strip() not in test]
for line in missing:
    print(f"example not in {sys.argv[2]}: {line}")
sys.exit(1 if missing else 0)
