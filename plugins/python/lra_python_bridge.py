# The Python half of lrahost's Python plugin (python_plugin.cpp): loads a
# researcher's file by path, checks the class against the mixer contract and
# describes it; formats a Python exception for the host's error message.
# Compiled into lra_mixer_python.so; runs inside the embedded interpreter.
import hashlib
import importlib.util
import inspect
import json
import os
import platform
import re
import sys
import traceback

CAPABILITIES = ()  # the SDK's names (lra/capabilities.h), set by python_interpreter.cpp once this has run
# The mixer spec's fields, passed to every constructor as keyword arguments.
SPEC_FIELDS = ("d_model", "heads", "qkv_dim", "max_len", "causal", "attention_dropout", "layer_index", "seed",
               "rotary_base")


class ContractError(Exception):
    """The class breaks the mixer contract (the message says how)."""


def _versions():
    import torch
    return "Python " + platform.python_version() + ", torch " + torch.__version__


def _sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


# Every user folder loaded so far -> the modules imported from it, by their
# names in sys.modules (its helpers: `import helper` beside the file).
_folders = {}


def _under(f, folder):
    f = getattr(f, "__file__", None) if not isinstance(f, str) else f
    return bool(f) and os.path.realpath(f).startswith(folder + os.sep)


def _enter_folder(folder):
    """Makes `folder` the one user folder that imports see: its own helper
    modules are in sys.modules under their plain names, those of every other
    user folder are not (they stay with their folder, and come back when one of
    its files is loaded), and it is first on sys.path, other user folders off
    it. So two folders each with a helper.py (or a model.py) stay apart."""
    for other, mods in _folders.items():
        if other == folder:
            continue
        for name, module in list(sys.modules.items()):
            if _under(module, other) and not name.startswith("lra_user_"):
                mods[name] = sys.modules.pop(name)
        while other in sys.path:
            sys.path.remove(other)
    mods = _folders.setdefault(folder, {})
    sys.modules.update(mods)
    while folder in sys.path:
        sys.path.remove(folder)
    sys.path.insert(0, folder)
    return mods


def _module_name(path):
    stem = re.sub(r"\W", "_", os.path.splitext(os.path.basename(path))[0])
    return "lra_user_" + hashlib.sha256(path.encode()).hexdigest()[:16] + "_" + stem


def unload(path):
    """Forgets the file's module (the host refused it), so that opening it
    again imports it again."""
    sys.modules.pop(_module_name(os.path.realpath(path)), None)


def load_module(path):
    """Imports the file under a name unique to its path, so two files named
    model.py in one process stay apart; its folder goes first on sys.path so
    that it can import its own helper modules, which are kept apart from
    another folder's helpers of the same name (_enter_folder)."""
    path = os.path.realpath(path)
    folder = os.path.dirname(path)
    mods = _enter_folder(folder)
    name = _module_name(path)
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ContractError(path + " cannot be imported as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    finally:
        for n, m in list(sys.modules.items()):
            if _under(m, folder) and not n.startswith("lra_user_"):
                mods[n] = m
    return module


def _local_files(folder, module):
    """Every module file loaded from the class's own folder (its imports); not
    another class's file from the same folder that this process loaded too
    (the identity must not depend on what else was opened)."""
    files = {}
    prefix = folder + os.sep
    for m in list(sys.modules.values()):
        f = getattr(m, "__file__", None)
        if not f or (getattr(m, "__name__", "").startswith("lra_user_") and m is not module):
            continue
        f = os.path.realpath(f)
        if f.startswith(prefix) and os.path.isfile(f):
            files[os.path.relpath(f, folder)] = _sha256(f)
    return files


def _option_type(who, name, value):
    # bool first: True is an int too.
    for t, label in ((bool, "bool"), (int, "int"), (float, "float"), (str, "str")):
        if type(value) is t:
            if t is int and not -(2 ** 63) <= value < 2 ** 63:
                raise ContractError("%s.lra_options['%s'] = %d does not fit a 64-bit integer" % (who, name, value))
            return label
    raise ContractError("%s.lra_options['%s'] = %r is a %s: an option's default must be a bool, int, float or str "
                        "(its type is the option's type)" % (who, name, value, type(value).__name__))


def describe(path, class_name):
    """The class as a mixer: (class, capabilities, [(option, default)], identity JSON).
    Every refusal names the file and the class (FILE.py:CLASS)."""
    import torch
    module = load_module(path)
    where = os.path.realpath(path)
    who = "%s:%s" % (where, class_name)
    cls = getattr(module, class_name, None)
    if cls is None:
        found = sorted(n for n, v in vars(module).items()
                       if inspect.isclass(v) and issubclass(v, torch.nn.Module) and v.__module__ == module.__name__)
        raise ContractError("%s defines no class '%s' (its torch.nn.Module classes: %s); name one as FILE.py:CLASS"
                            % (where, class_name, ", ".join(found) if found else "none"))
    if not (inspect.isclass(cls) and issubclass(cls, torch.nn.Module)):
        raise ContractError("%s is a %s, not a torch.nn.Module subclass" % (who, type(cls).__name__))

    caps = getattr(cls, "lra_capabilities", set())
    if isinstance(caps, str) or not isinstance(caps, (set, frozenset, list, tuple)):
        raise ContractError("%s.lra_capabilities must be a set of strings from %s, got %r"
                            % (who, ", ".join(CAPABILITIES), caps))
    for c in caps:
        if c not in CAPABILITIES:
            raise ContractError("%s.lra_capabilities: unknown capability %r (known: %s)"
                                % (who, c, ", ".join(CAPABILITIES)))

    options = getattr(cls, "lra_options", {})
    if not isinstance(options, dict):
        raise ContractError("%s.lra_options must be a dict {name: default}, got %s" % (who, type(options).__name__))
    declared = []
    for name, value in options.items():
        if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            raise ContractError("%s.lra_options: option name %r must be a Python identifier" % (who, name))
        if name in SPEC_FIELDS:
            raise ContractError("%s.lra_options['%s'] clashes with the mixer spec's field of that name (the host "
                                "sets it from the manifest)" % (who, name))
        declared.append((name, _option_type(who, name, value), value))

    # Every argument the host passes must be accepted (or **kwargs).
    params = inspect.signature(cls.__init__).parameters
    if not any(p.kind == inspect.Parameter.VAR_KEYWORD for p in params.values()):
        missing = [n for n in SPEC_FIELDS + tuple(n for n, _, _ in declared) if n not in params]
        if missing:
            raise ContractError("%s.__init__ does not take %s: the host passes the mixer spec (%s) and every "
                                "lra_options entry as keyword arguments; add them or **kwargs"
                                % (who, ", ".join(missing), ", ".join(SPEC_FIELDS)))

    identity = {"language": "python", "class": class_name, "file": os.path.basename(where),
                "files": _local_files(os.path.dirname(where), module),
                "python": platform.python_version(), "torch": torch.__version__}
    return cls, sorted(caps), declared, json.dumps(identity, sort_keys=True)


def _one_line(text, limit=2000):
    """The host's errors are one line (docs/cli.md): line breaks become " | "."""
    text = " | ".join(part.strip() for part in str(text).splitlines() if part.strip())
    return text if len(text) <= limit else text[:limit] + "..."


def format_exception(exc, what, tb=None, folder=None):
    """One line: what raised which exception with its message, where (the
    innermost frame in the researcher's folder, else the innermost frame), and
    the traceback's last three frames with their code; a syntax error or a
    missing module says so. `tb`: the traceback, where the exception does not
    hold it (one raised from a frame that C++ called directly)."""
    if isinstance(exc, ContractError):
        return _one_line(exc)
    if isinstance(exc, SyntaxError):
        return "%s:%s: syntax error: %s%s" % (exc.filename, exc.lineno, exc.msg,
                                              (": " + exc.text.strip()) if exc.text and exc.text.strip() else "")
    # Without torch.nn.Module's call dispatch (every forward's outermost frame).
    frames = [f for f in traceback.extract_tb(tb if tb is not None else exc.__traceback__)
              if not (f.name == "_call_impl" and f.filename.endswith(os.path.join("torch", "nn", "modules",
                                                                                  "module.py")))]
    inner = frames[-1] if frames else None
    if folder:
        folder = os.path.realpath(folder)
        mine = [f for f in frames if _under(f.filename, folder)]
        inner = mine[-1] if mine else inner
    where = "%s:%d (in %s)" % (inner.filename, inner.lineno, inner.name) if inner else "(no traceback)"
    if isinstance(exc, ModuleNotFoundError):
        return ("%s: imports module '%s', which this interpreter cannot find (%s, %s; sys.path %s): install it for "
                "that interpreter or put it beside the file" % (where, exc.name, _versions(), sys.executable,
                                                                  sys.path))
    last = " > ".join("%s:%d in %s%s" % (f.filename, f.lineno, f.name, (": " + f.line.strip()) if f.line else "")
                      for f in frames[-3:])
    return _one_line("%s: %s raised %s: %s [traceback, last frames: %s]" % (
        where, what, type(exc).__name__, _one_line(exc, 1000) or "(no message)", last or "none"), 4000)
