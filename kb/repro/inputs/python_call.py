"""Run one call into host-side Python logic of a released wheel, on a machine with no GPU, and print
what it returned or raised.

`kb repro` runs this with its own interpreter, nothing installed, and adds the wheel's file:

    python python_call.py --module=flashinfer.compilation_context --env=FLASHINFER_CUDA_ARCH_LIST:12.1a \
        --call='CompilationContext().get_nvcc_flags_list(supported_major_versions=[10])' \
        --kernel-file=DIR/flashinfer/compilation_context.py

The file imports torch (whose wheel pulls gigabytes of CUDA libraries), so it is not imported: the
top-level definitions `--call` names, and those they name in turn, are lifted out of it (lift.py)
into a module named `--module`, as the package names it (its logger is named so). Its top-level
imports follow where this interpreter has the module. What the code would ask of torch, the GPU or
the CUDA toolkit is given instead, each a stand-in function put in place before the lift:

    --returns=torch.cuda.get_device_capability:(12,0)   returns that Python literal, whatever it is given
    --at-least=flashinfer.jit.cpp_ext.is_cuda_version_at_least:12.8
                                                        answers "is the version at least V?" as a
                                                        toolkit of version 12.8 would

    --object=layer.w13_weight.device:'cuda:0'
                                                        an object `layer` for --call to pass, whose
                                                        attribute path reads that literal

--method=Class.method lifts that method alone, in a class without the original's bases or other
members (lift.py), for a --call such as `DeepseekV4MegaMoEExperts._check_runtime_supported(layer)` that
passes an --object standing in for the instance.

--env=NAME:VALUE sets an environment variable first. `--call` is one expression of calls, attribute
reads, names and literals (no operators, no subscripts), evaluated in the lifted module.

Output: log records as `LEVEL logger: message`, then the value's repr, exit 0; or the exception as a
traceback's last line shows it (`RuntimeError: ...`), exit 1.
"""

import argparse
import ast
import logging
import os
import platform
import sys
import tempfile
import types

from lift import DEFINITIONS, exception_line, lifted, name_and_literal

# The nodes a --call may hold: calls on names and attributes with literal arguments.
CALL_NODES = (ast.Expression, ast.Call, ast.Attribute, ast.Name, ast.Load, ast.keyword, ast.Constant, ast.List,
              ast.Tuple, ast.UnaryOp, ast.USub)


def fail(message):
    sys.exit(f"python_call.py: {message}")


def pair(text, option):
    name, sep, value = text.partition(":")
    if not sep or not name:
        fail(f"--{option}={text!r} must be NAME:VALUE")
    return name, value


def literal(text, option, example):
    try:
        return name_and_literal(text, option, example)
    except ValueError as exc:
        fail(str(exc))


def release(text):
    """'12.8' -> (12, 8): a version compared as the toolkit's X.Y."""
    try:
        return tuple(int(part) for part in text.split("."))
    except ValueError:
        fail(f"{text!r} is not a version such as 12.8")


def stand_in(dotted, function):
    """Put `function` at `dotted` (module path, then the attribute), making the modules it needs."""
    module_name, _, attribute = dotted.rpartition(".")
    if not module_name:
        fail(f"{dotted!r} must name a module and a function in it, such as torch.cuda.device_count")
    parts = module_name.split(".")
    for i in range(1, len(parts) + 1):
        name = ".".join(parts[:i])
        if name not in sys.modules:
            sys.modules[name] = types.ModuleType(name)
            if i > 1:
                setattr(sys.modules[".".join(parts[:i - 1])], parts[i - 1], sys.modules[name])
    setattr(sys.modules[module_name], attribute, function)


def returning(value):
    return lambda *args, **kwargs: value


def at_least(version):
    return lambda asked, *args, **kwargs: version >= release(str(asked))


def put(objects, dotted, value):
    """Set `value` at `dotted` ('layer.w13_weight.device') in `objects`, making the objects on the way."""
    name, *path = dotted.split(".")
    if not (name.isidentifier() and path and all(part.isidentifier() for part in path)):
        fail(f"--object={dotted!r} must name an object and an attribute path, such as layer.w13_weight.device")
    # As in --call, a dunder (__class__, __builtins__) would reach past plain data: the object holds
    # only the attributes the wheel's check reads.
    dunders = [part for part in (name, *path) if part.startswith("__")]
    if dunders:
        fail(f"--object={dotted!r} may not name {', '.join(dunders)}: name the attributes the check reads")
    here = objects.setdefault(name, types.SimpleNamespace())
    for part in path[:-1]:
        if not hasattr(here, part):
            setattr(here, part, types.SimpleNamespace())
        here = getattr(here, part)
    setattr(here, path[-1], value)


def wheel_version():
    """'<distribution> <version>' of the wheel `kb repro` installed (the first entry of PYTHONPATH)."""
    from importlib import metadata

    root = os.environ.get("PYTHONPATH", "").split(os.pathsep)[0]
    names = [f"{d.metadata['Name']} {d.version}" for d in metadata.distributions(path=[root])] if root else []
    return names[0] if names else "no wheel on PYTHONPATH"


def parsed_call(text):
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as exc:
        fail(f"--call={text!r} is not a Python expression: {exc.msg}")
    bad = sorted({type(node).__name__ for node in ast.walk(tree) if not isinstance(node, CALL_NODES)})
    if bad:
        fail(f"--call={text!r} may hold only calls, names, attributes and literals, not {', '.join(bad)}")
    # A dunder reaches past the lifted module (__import__, __class__): the call is into the wheel's code only.
    dunders = sorted({getattr(node, "id", getattr(node, "attr", "")) for node in ast.walk(tree)
                      if getattr(node, "id", getattr(node, "attr", "")).startswith("__")})
    if dunders:
        fail(f"--call={text!r} may not name {', '.join(dunders)}: call the wheel's own definitions")
    return tree


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--version", action="store_true")
    parser.add_argument("--module")
    parser.add_argument("--call")
    parser.add_argument("--env", action="append", default=[])
    parser.add_argument("--returns", action="append", default=[])
    parser.add_argument("--at-least", action="append", default=[])
    parser.add_argument("--object", action="append", default=[])
    parser.add_argument("--method", action="append", default=[])
    parser.add_argument("--kernel-file")
    options = parser.parse_args()
    if options.version:
        # The interpreter is kb repro's own, not a pinned release: its version is recorded beside the
        # wheel's, the release that matters (KB091 checks it against the entry's range).
        print(f"python {platform.python_version()}, {wheel_version()}")
        return 0
    if not (options.module and options.call and options.kernel_file):
        parser.error("--module, --call and --kernel-file are all needed")
    # The installed wheel is there for its version only: the package itself is never imported (its
    # __init__ imports torch), so a name the lift cannot find stays undefined instead.
    wheel = set(filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep)))
    sys.path[:] = [entry for entry in sys.path if entry not in wheel]
    for name, value in (pair(item, "env") for item in options.env):
        os.environ[name] = value
    for name, value in (literal(item, "returns", "torch.cuda.device_count:1") for item in options.returns):
        stand_in(name, returning(value))
    for name, value in (pair(item, "at-least") for item in options.at_least):
        stand_in(name, at_least(release(value)))
    objects = {}
    for name, value in (literal(item, "object", "layer.w13_weight.device:'cuda:0'") for item in options.object):
        put(objects, name, value)
    call = parsed_call(options.call)
    alone = {method.partition(".")[0]: method for method in options.method}
    # The names the call reads, a --method's class standing for that method alone (lift.py lifts it so).
    names = sorted({alone.get(node.id, node.id) for node in ast.walk(call)
                    if isinstance(node, ast.Name) and node.id not in objects})
    # Log records on standard output, in order with the result, named by logger as a log shows them.
    logging.basicConfig(stream=sys.stdout, format="%(levelname)s %(name)s: %(message)s")
    module = lifted(options.kernel_file, names, tempfile.mkdtemp(), "", options.module, DEFINITIONS,
                    keep_imports=True)
    try:
        value = eval(compile(call, "--call", "eval"), vars(module) | objects)
    except Exception as exc:  # what the lifted code raised, as a traceback's last line shows it
        print(exception_line(exc, own=(module.__name__,)), flush=True)
        return 1
    print(repr(value), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
