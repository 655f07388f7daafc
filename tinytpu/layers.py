"""The layers of the Python side, lowest first: the one place their order is declared.

A module imports only from its own layer or below (a function-level import counts as much as one at
the top), there is no cycle between modules, and a third-party package in THIRD_PARTY is imported
only from its layer up, so that, e.g., the assembler runs without tinygrad. Importing a module has no
side effect beyond defining it (the tinygrad device is registered lazily by the start-up hook), but
one: tinytpu.backend.device installs its kernel optimisation policy into tinygrad when it loads,
since tinygrad's compile-pool processes get that module by unpickling the renderer.
tests/test_layers.py checks all of it: statically (ast) and by importing each layer in a fresh
interpreter. Standard library only.

  base        configuration, the ISA table, tool locations
  records     Bundle, Result, the record checks and the result lines
  assembler   TASM, and the bundle text format (its program goes through the assembler)
  simulators  the golden model, the co-simulation and its one server pool, the profiler, random programs
  backend     the tinygrad TINYTPU device
  testbenches the pyuvm kit and one environment per unit
  regression  lists, runner, reports, coverage
  apps        the command line and its tools (run, gen, bench, demo, fuzz), the start-up hook"""
from __future__ import annotations

LAYERS: list[tuple[str, tuple[str, ...]]] = [
  ("base", ("tinytpu", "tinytpu.config", "tinytpu.isa", "tinytpu.tools", "tinytpu.layers")),
  ("records", ("tinytpu.records",)),
  ("assembler", ("tinytpu.asm", "tinytpu.bundle", "tinytpu.chipbundle")),
  ("simulators", ("tinytpu.golden", "tinytpu.golden.*", "tinytpu.cosim", "tinytpu.profile", "tinytpu.randprog", "tinytpu.randcheck", "tinytpu.shrink",
                  "tinytpu.randtree", "tinytpu.randdma", "tinytpu.randemb", "tinytpu.randreach", "tinytpu.lockstep", "tinytpu.chipsim", "tinytpu.randchip")),
  ("backend", ("tinytpu.backend", "tinytpu.backend.*")),
  ("testbenches", ("tinytpu.tb", "tinytpu.tb.*")),
  ("regression", ("tinytpu.regress", "tinytpu.regress.*")),
  ("apps", ("tinytpu.cli", "tinytpu.__main__", "tinytpu.run", "tinytpu.gen", "tinytpu.gen_decode", "tinytpu.bench",
            "tinytpu.demo", "tinytpu.demo_cnn", "tinytpu.digits", "tinytpu.triage", "tinytpu.mutate", "tinytpu.fuzz", "tinytpu.fuzzgen", "tinytpu.fuzzprog", "_tinytpu_autoload",
            "tinytpu.*")),  # a new tinytpu module not listed above is an app: anything lower that imports it is flagged
]
NAMES = [name for name, _ in LAYERS]

# third-party packages a layer below the one named here must not import
THIRD_PARTY = {"tinygrad": "backend", "torch": "apps", "cocotb": "testbenches", "pyuvm": "testbenches",
               "dask": "regression", "distributed": "regression",
               "sklearn": "apps", "matplotlib": "apps", "onnx": "apps"}


def layer_of(module: str) -> int | None:
  """Index into LAYERS of a project module (an exact name wins over a `pkg.*` pattern), None if not ours."""
  best: tuple[int, int] | None = None  # (specificity, layer)
  for i, (_, pats) in enumerate(LAYERS):
    for p in pats:
      if p == module:
        return i
      if p.endswith(".*") and module.startswith(p[:-1]) and (best is None or len(p) > best[0]):
        best = (len(p), i)
  return best[1] if best else None


def third_party_floor(module: str) -> int | None:
  """The lowest layer allowed to import this third-party module (None: any layer may)."""
  top = THIRD_PARTY.get(module.split(".")[0])
  return NAMES.index(top) if top is not None else None


# ---------------------------------------------------------------------------------------------
# the static check: every import of every module, read with ast
FOLDERS = {"tinytpu": "tinytpu", "tinytpu.golden": "golden", "tinytpu.backend": "backend", "tinytpu.tb": "tb",
           "tinytpu.regress": "regress", "": "startup"}  # package -> folder of the clone (as setup.py maps them)


def modules(root) -> dict[str, object]:
  """Module name -> source path of every Python file of the project under a clone's `root`."""
  import pathlib
  out = {}
  for pkg, folder in FOLDERS.items():
    base = pathlib.Path(root, folder)
    for f in sorted(base.rglob("*.py")):
      if "__pycache__" in f.parts or any(p.endswith(".egg-info") for p in f.parts):
        continue
      parts = list(f.relative_to(base).with_suffix("").parts)
      if parts[-1] == "__init__":
        parts.pop()
      if pkg == "" and len(parts) != 1:
        continue
      name = ".".join(p for p in (pkg, *parts) if p)
      out[name] = f
  return out


def imports(name: str, path, known) -> list[tuple[str, int]]:
  """(imported module, line) for every import in the file: top level or not, `importlib.import_module("...")`
  with a literal too. `from pkg import x` names pkg.x when that is a module of `known`, else pkg."""
  import ast
  import pathlib
  tree = ast.parse(pathlib.Path(path).read_text(), str(path))
  is_pkg = pathlib.Path(path).name == "__init__.py"
  here = name.split(".") if is_pkg else name.split(".")[:-1]
  out = []
  for node in ast.walk(tree):
    if isinstance(node, ast.Import):
      out += [(a.name, node.lineno) for a in node.names]
    elif isinstance(node, ast.ImportFrom):
      base = node.module or ""
      if node.level:
        up = here[:len(here) - node.level + 1] if node.level > 1 else here
        base = ".".join([*up, *([node.module] if node.module else [])])
      for a in node.names:
        sub = f"{base}.{a.name}"
        out.append((sub if sub in known else base, node.lineno))
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "import_module" \
        and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
      out.append((node.args[0].value, node.lineno))
  return [(m, ln) for m, ln in out if m and m != "__future__"]


def graph(root) -> tuple[dict[str, list[tuple[str, int]]], list[str]]:
  """The import graph between the project's modules and the layering violations found on the way."""
  mods = modules(root)
  edges: dict[str, list[tuple[str, int]]] = {}
  problems = []
  for name, path in mods.items():
    me = layer_of(name)
    if me is None:
      problems.append(f"{path}: module {name} is in no layer (add it to tinytpu/layers.py LAYERS)")
      continue
    edges[name] = []
    for m, ln in imports(name, path, mods):
      if m in mods or layer_of(m) is not None:
        edges[name].append((m, ln))
        them = layer_of(m)
        if them is not None and them > me:
          problems.append(f"{path}:{ln}: {name} ({NAMES[me]}) imports {m} ({NAMES[them]}), a higher layer")
      elif (floor := third_party_floor(m)) is not None and floor > me:
        problems.append(f"{path}:{ln}: {name} ({NAMES[me]}) imports {m}, allowed from the {NAMES[floor]} layer up")
  return edges, problems


def cycles(edges: dict[str, list[tuple[str, int]]]) -> list[list[str]]:
  """Every strongly connected set of more than one module (or a module importing itself), Tarjan's algorithm."""
  index: dict[str, int] = {}
  low: dict[str, int] = {}
  stack: list[str] = []
  on: set[str] = set()
  out: list[list[str]] = []

  def visit(v: str):
    index[v] = low[v] = len(index)
    stack.append(v); on.add(v)
    for w, _ in edges.get(v, []):
      if w not in edges:
        continue
      if w not in index:
        visit(w)
        low[v] = min(low[v], low[w])
      elif w in on:
        low[v] = min(low[v], index[w])
    if low[v] == index[v]:
      comp = []
      while True:
        w = stack.pop(); on.discard(w); comp.append(w)
        if w == v:
          break
      if len(comp) > 1 or any(w == v for w, _ in edges.get(v, [])):
        out.append(sorted(comp))

  for v in sorted(edges):
    if v not in index:
      visit(v)
  return out


def check(root) -> list[str]:
  """Everything wrong with the layering of the clone at `root` ([] when it is clean)."""
  edges, problems = graph(root)
  return problems + [f"import cycle: {' <-> '.join(c)}" for c in cycles(edges)]


def main(argv: list[str] | None = None) -> int:
  from tinytpu import tools
  if tools.CLONE is None:
    print("layers: not a clone, nothing to check")
    return 0
  problems = check(tools.CLONE)
  for p in problems:
    print(p)
  print(f"layers: {len(problems)} problem(s) in {len(modules(tools.CLONE))} modules" if problems else
        f"layers: {len(modules(tools.CLONE))} modules, no higher-layer import, no cycle")
  return 1 if problems else 0


if __name__ == "__main__":
  import sys
  sys.exit(main())
