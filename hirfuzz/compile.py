"""Compilation: an IRModule becomes an executable under one configuration (in workers).

A configuration is (pass sequence, opt level, pipeline, executable mode, target). The
executors are the Relax counterparts of HIRGen's four:

    vm           relax.build(exec_mode="bytecode") on the Relax VM: the baseline
    compiled     relax.build(exec_mode="compiled")
    unoptimised  PassContext(opt_level=0), no pass sequence
    (reference)  hirfuzz's NumPy interpreter, in the coordinator

A pass sequence runs before relax.build, inside the configuration's PassContext.
"""
from __future__ import annotations

EXECUTORS = {
    "vm": {"exec_mode": "bytecode", "pipeline": "default", "opt_level": 3},
    "compiled": {"exec_mode": "compiled", "pipeline": "default", "opt_level": 3},
    "unoptimised": {"exec_mode": "bytecode", "pipeline": "default", "opt_level": 0},
}
# relax.build(relax_pipeline="zero") is no executor: the zero pipeline stops before the
# VM lowering, so CodeGenVM rejects every module built that way (seen on 0.27)


def make_config(executor: str = "vm", target: str = "llvm", passes: list | None = None,
                opt_level: int | None = None) -> dict:
    """A configuration as plain data (it travels to workers and into reproducers)."""
    config = {"name": executor, "target": target, "passes": passes or [], **EXECUTORS[executor]}
    if opt_level is not None:
        config["opt_level"] = opt_level
    return config


def describe(config: dict, with_passes: bool = True) -> str:
    from .passes import describe as describe_passes
    text = f"{config['name']} on {config['target']} (opt_level {config['opt_level']}, {config['pipeline']} pipeline)"
    return text + (f" after {describe_passes(config['passes'])}" if config["passes"] and with_passes else "")


def device_for(target):
    """The device for a target string or a configuration."""
    import tvm
    target = target if isinstance(target, str) else target["target"]
    kind = tvm.target.Target(target).kind.name
    return tvm.cuda(0) if kind == "cuda" else tvm.cpu(0)


def apply_passes(mod, config: dict):
    """Run the configuration's pass sequence (stage 'passes')."""
    import tvm

    from .passes import instantiate
    if not config.get("passes"):
        return mod
    with tvm.transform.PassContext(opt_level=config["opt_level"]):
        return tvm.transform.Sequential([instantiate(step) for step in config["passes"]])(mod)


def build_module(mod, config: dict | None = None):
    """relax.build under the configuration (stage 'build')."""
    import tvm
    from tvm import relax
    config = config or make_config()
    with tvm.transform.PassContext(opt_level=config["opt_level"]):
        return relax.build(mod, target=config["target"], relax_pipeline=config["pipeline"],
                           exec_mode=config["exec_mode"])
