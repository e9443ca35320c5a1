"""Lift named definitions out of an upstream Python file whose imports are not installed.

Shared by the drivers in this folder (`kb repro` copies it beside the one it runs): triton_compile.py
lifts a kernel and the functions it calls, python_call.py a class or function and what it uses.
A released wheel's file imports torch or the serving engine at its top; importing the file would
fail, so the definitions asked for, and the top-level ones they name, are cut out with `ast` and
written to a module of their own, which is then imported.
"""

import ast
import importlib.util
import os
import sys

FUNCTIONS = (ast.FunctionDef,)
# A class, or a module-level name bound once (`logger = logging.getLogger(__name__)`), is lifted
# too when asked: host-side logic reads both.
DEFINITIONS = (ast.FunctionDef, ast.ClassDef, ast.Assign)


def name_and_literal(text, option, example):
    """'head_dim:128' -> ('head_dim', 128): one NAME:LITERAL item of a driver's option, NAME a dotted
    name (torch.cuda.device_count). Raises ValueError naming the option, the item and an `example`
    where `text` is not one."""
    name, sep, value = text.partition(":")
    if sep and all(part.isidentifier() for part in name.split(".")):
        try:
            return name, ast.literal_eval(value)
        except (ValueError, SyntaxError):
            pass
    raise ValueError(f"--{option} item {text!r} must be NAME:LITERAL (a Python literal after the colon), "
                     f"such as {example}")


def exception_line(exc, own=()):
    """The exception as a traceback's last line shows it: 'module.Kind: message', without the module
    for a builtin one or one defined in the modules named in `own` (the lifted code)."""
    kind = type(exc)
    where = "" if kind.__module__ in ("builtins", *own) else kind.__module__ + "."
    return f"{where}{kind.__qualname__}: {exc}"

def _bound(node):
    """The names a top-level definition binds."""
    if isinstance(node, ast.Assign):
        return [t.id for t in node.targets if isinstance(t, ast.Name)]
    return [node.name]


def lifted(path, names, folder, header, module="lifted_kernel", kinds=FUNCTIONS, keep_imports=False):
    """The module holding `names` and the top-level definitions (of `kinds`) they name, lifted out
    of `path`. `header` opens the module (the imports the lifted code needs); with `keep_imports`
    the file's own top-level absolute imports follow it when their module can be imported (or is
    in sys.modules, as a stand-in), so a lifted class reads `os` or `torch` as the file does.
    Exits with a message when a name is not a top-level definition of the file."""
    tree = ast.parse(open(path, encoding="utf-8").read())
    top = {}
    for node in tree.body:
        if isinstance(node, kinds):
            for name in _bound(node):
                top.setdefault(name, node)
    for name in [n for n in names if "." in n]:
        top[name] = _method(top.get(name.partition(".")[0]), name)
    missing = [n for n in names if top.get(n) is None]
    if missing:
        sys.exit(f"{os.path.basename(sys.argv[0])}: no top-level {', '.join(map(repr, missing))} in "
                 f"{os.path.basename(path)}")
    wanted, todo = [], list(names)
    while todo:
        node = top[todo.pop()]
        if node in wanted:
            continue
        wanted.append(node)
        todo += [n.id for n in ast.walk(node) if isinstance(n, ast.Name) and n.id in top]
    imports = [ast.unparse(node) for node in tree.body if keep_imports and _importable(node)]
    body = [ast.unparse(node) for node in sorted(wanted, key=lambda node: node.lineno)]
    source = "\n".join([header, *imports]) + "\n\n\n" + "\n\n\n".join(body) + "\n"
    module_path = os.path.join(folder, f"{module.rpartition('.')[2]}.py")
    with open(module_path, "w", encoding="utf-8") as out:
        out.write(source)
    spec = importlib.util.spec_from_file_location(module, module_path)
    lifted_module = importlib.util.module_from_spec(spec)
    # Its own dotted name (a logger named after it, a relative import inside a function) and a place
    # in sys.modules, as an imported module has.
    sys.modules[module] = lifted_module
    spec.loader.exec_module(lifted_module)
    return lifted_module


def _method(node, dotted):
    """'Class.method' as a class of that one method, without the class's bases or other members.
    A check can sit in a method of a torch module class (`nn.Module`), whose base and other members
    (their annotations name torch's types) cannot be defined here; the method itself is kept as written."""
    class_name, _, method = dotted.partition(".")
    if not isinstance(node, ast.ClassDef):
        return None
    found = [item for item in node.body if isinstance(item, ast.FunctionDef) and item.name == method]
    if not found:
        return None
    return ast.fix_missing_locations(ast.ClassDef(name=class_name, bases=[], keywords=[], body=found,
                                                  decorator_list=[], type_params=[], lineno=node.lineno))


def _importable(node):
    """An absolute top-level import whose modules this interpreter has, installed or stood in."""
    if isinstance(node, ast.Import):
        roots = [alias.name for alias in node.names]
    elif isinstance(node, ast.ImportFrom) and not node.level:
        roots = [node.module]
    else:
        return False
    return all(root in sys.modules or _found(root.split(".")[0]) for root in roots)


def _found(name):
    try:
        return importlib.util.find_spec(name) is not None
    except ValueError:  # a stand-in module (torch) has no spec: `import torch.nn` is not possible here
        return False
