import os
import lit.formats

config.name = "strata"
config.test_format = lit.formats.ShTest(execute_external=True)
config.suffixes = [".mlir"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(os.path.dirname(config.strata_bin_dir), "tests", "lit-out")
config.environment["PATH"] = os.pathsep.join([config.strata_bin_dir, config.llvm_tools_dir, config.environment.get("PATH", os.environ["PATH"])])
