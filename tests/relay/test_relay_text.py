"""Relay text for reproducers (dialects/relay/text.py) and the mutants it prints, under TVM 0.19.

A Relay variable is bound in one place: one Var object bound in two global functions
prints as `%x-malformed-ir`, which tvm.relay.parse rejects ("expected a `)` found `-`").
func_to_closure once built such modules (the closure reused f's own variables while f
stayed in the module), and a finding on one got a reproducer that could not print it."""
from relay_env import run_in_relay

SHARED_VARIABLES_SCRIPT = """
import numpy as np
import tvm
from tvm import relay
from hirfuzz.dialects.relay.mutators import MUTATORS
from hirfuzz.dialects.relay.text import module_to_text, own_variables, parse_text

def shared(mod):
    # (function, variable) pairs where a variable one function binds is bound by another too
    bound = {gv.name_hint: relay.analysis.bound_vars(f) for gv, f in mod.functions.items()}
    return [(a, v.name_hint) for a in bound for b in bound if a < b
            for v in bound[a] if any(v.same_as(w) for w in bound[b])]

# by hand, as func_to_closure once did: @g binds @f's own parameter and let variable again
x = relay.var("x", shape=(2,), dtype="float32")
t = relay.var("t", shape=(2,), dtype="float32")
f_func = relay.Function([x], relay.Let(t, relay.negative(x), relay.add(t, relay.const(1.0))), x.type_annotation)
y = relay.var("y", shape=(2,), dtype="float32")
f, g = relay.GlobalVar("f"), relay.GlobalVar("g")
clean = tvm.IRModule()
clean[f] = f_func
clean["main"] = relay.Function([y], relay.Call(f, [y]))
clean = relay.transform.InferType()(clean)
local = relay.var("local_f")
mod = tvm.IRModule(dict(clean.functions))
typed_f = clean[f]
z = relay.var("z", shape=(2,), dtype="float32")
mod[g] = relay.Function([z], relay.Let(local, relay.Function(typed_f.params, typed_f.body, typed_f.ret_type),
                                       relay.Call(local, [z])), typed_f.ret_type)
assert shared(mod), "the module must share variables for this test to mean anything"
assert "malformed" in mod.astext(show_meta_data=False)  # what the printer does with them
text, consts = module_to_text(mod)
assert "malformed" not in text, text
assert not shared(own_variables(mod))
tvm.ir.assert_structural_equal(relay.transform.InferType()(own_variables(mod)), parse_text(text, consts))

# the finding's chain: outline_main, then func_to_closure (which keeps the outlined function,
# so the closure must not bind its variables again); the mutant prints and computes the same
single = relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function([x], f_func.body)))
outlined = MUTATORS["outline_main"].apply(single, np.random.default_rng(0), {})
mutant = MUTATORS["func_to_closure"].apply(outlined, np.random.default_rng(0), {})
assert len(mutant.functions) == 3
assert not shared(mutant), shared(mutant)
text, consts = module_to_text(mutant)
tvm.ir.assert_structural_equal(relay.transform.InferType()(own_variables(mutant)), parse_text(text, consts))
a = np.array([1.5, -2.0], dtype="float32")
run = lambda m: relay.create_executor("vm", mod=m, target="llvm").evaluate()(a).numpy()
np.testing.assert_array_equal(run(mutant), run(single))
print("SHARED OK")
"""


def test_text_and_func_to_closure_give_each_function_its_own_variables():
    run = run_in_relay("-c", SHARED_VARIABLES_SCRIPT, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "SHARED OK" in run.stdout


META_ATTRS_SCRIPT = """
import tvm
from tvm import relay
from hirfuzz.dialects.relay.text import module_to_text, parse_text

# scatter_elements prints its attributes to the metadata section, where the axis is a node
# reference: a rank-1 call with axis -1 shows "axis": "4" (read once as an invalid axis 4)
x = relay.var("x", shape=(3,), dtype="float32")
i = relay.var("i", shape=(1,), dtype="int64")
u = relay.var("u", shape=(1,), dtype="float32")
mod = relay.transform.InferType()(tvm.IRModule.from_expr(
    relay.Function([x, i, u], relay.scatter_elements(x, i, u, axis=-1, reduction="add"))))
text, consts = module_to_text(mod)
assert '"axis": "4"' in text, text  # the section's node reference, still there for the parser
call = next(line for line in text.splitlines() if "scatter_elements(" in line)
assert 'meta[relay.attrs.ScatterElementsAttrs][0] /* axis=-1, reduction="add" */' in call, call
tvm.ir.assert_structural_equal(mod, parse_text(text, consts), map_free_vars=True)
assert parse_text(text, consts)["main"].body.attrs.axis == -1
print("META OK")
"""


def test_text_gives_the_values_of_attributes_printed_to_the_metadata_section():
    run = run_in_relay("-c", META_ATTRS_SCRIPT, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "META OK" in run.stdout
