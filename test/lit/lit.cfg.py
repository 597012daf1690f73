# lit configuration for Octet: octet-opt, octetc and Debian's FileCheck.
import os
import lit.formats

config.name = "Octet"
config.test_format = lit.formats.ShTest(not lit_config.isWindows)
config.suffixes = [".mlir", ".onnxtxt", ".test"]
config.excludes = ["lit.cfg.py", "lit.site.cfg.py", "Inputs"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.octet_obj_root, "test", "lit")

tool_dirs = [os.path.join(config.octet_tools_dir, "octet-opt"),
             os.path.join(config.octet_tools_dir, "octetc"),
             os.path.join(config.octet_tools_dir, "octet-interp"),
             os.path.join(config.octet_tools_dir, "octet-jit-dump"),
             config.llvm_tools_dir]
config.environment["PATH"] = os.pathsep.join(tool_dirs + [config.environment.get("PATH", os.environ["PATH"])])
config.substitutions.append(("%python", config.python_executable))
config.substitutions.append(("%octet_src", config.octet_src_root))
config.substitutions.append(("%onnx_testdata", "/usr/share/libonnx-testdata/data"))
