"""What vLLM's EAGLE-3 loader does with each tensor of a head: the rules on names, shapes,
parameters left unloaded and layers borrowed from the target.

Each rule follows `head_model` (the Llama EAGLE-3 head class as read from vLLM's source)
and cites the line it relies on (`loader_facts.cite`). A message says what vLLM does:
it refuses the head at start, or it loads it silently wrong (`REFUSES`, `SILENT`); a
silent load is a warning (`--strict` fails it), with its consequence for acceptance.
"""

from __future__ import annotations

from ..checks import Check, failed, passed, warned
from .head_inspection import NO_CONFIG, WEIGHT_PROBLEMS, DrafterInspection
from .head_model import HeadConfig, Param, head_config, is_llama_eagle3, map_name, parameters
from .head_shapes import aux_count
from .loader_facts import cite, fact_present
from .versions import VllmVersion

__all__ = [
    "FIRST_REQUEST",
    "REFUSES",
    "SILENT",
    "check_borrowed",
    "check_tensor_names",
    "check_tensor_shapes",
    "check_unloaded",
    "loaded_params",
]

REFUSES = "vLLM {v} refuses it at start"
FIRST_REQUEST = "vLLM {v} starts and passes the health check, then fails every request"
SILENT = "vLLM {v} loads it silently wrong"
NO_WEIGHTS = "not checked: weights unreadable (see drafter.weights)"
# Tensors other rules judge: fc (drafter.fc_shape), d2t (drafter.vocab).
_OTHER_RULES = ("fc.weight",)
_DROPPED = ("rotary_emb.inv_freq", "rotary_emb.cos_cached", "rotary_emb.sin_cached")


def _model(
    ins: DrafterInspection, version: VllmVersion, arch: str | None
) -> tuple[HeadConfig, dict[str, Param]] | str:
    """(config, parameters) of a Llama EAGLE-3 head, or why the rule cannot check it."""
    if ins.config is None:
        return NO_CONFIG
    if ins.problem(*WEIGHT_PROBLEMS) is not None:
        return NO_WEIGHTS
    if not is_llama_eagle3(arch, version):
        return (
            f"not checked: peagle models vLLM's llama_eagle3 loader; {arch or 'this head'} "
            f"loads with another class in vLLM {version}"
        )
    hc = head_config(ins)
    assert hc is not None
    aux, _ = aux_count(ins.config, version, arch)
    params = parameters(hc, version, aux)
    if params is None:
        return (
            "not checked: config.json lacks a size the head class needs and its "
            f"model_type ({hc.model_type}) has no default peagle knows (see drafter.config_keys)"
        )
    return hc, params


def loaded_params(ins: DrafterInspection, params: dict[str, Param]) -> dict[str, str]:
    """{parameter name: checkpoint tensor name} for every tensor that loads into one."""
    out: dict[str, str] = {}
    for name in ins.tensors:
        kind, target = map_name(name)
        if kind == "param" and target in params:
            out[target] = name
    return out


def _prefix_fix(names: list[str], params: dict[str, Param]) -> str | None:
    """The prefix every unmapped name carries, when dropping it makes each load."""
    firsts = {n.split(".", 1)[0] for n in names if "." in n}
    if len(firsts) != 1:
        return None
    prefix = firsts.pop() + "."
    for n in names:
        kind, target = map_name(n.removeprefix(prefix))
        if kind == "unmapped" or (kind == "param" and target not in params):
            return None
    return prefix


def check_tensor_names(ins: DrafterInspection, version: VllmVersion, arch: str | None) -> Check:
    name = "drafter.tensor_names"
    model = _model(ins, version, arch)
    if isinstance(model, str):
        return warned(name, model)
    hc, params = model
    unknown: list[tuple[str, str]] = []  # (checkpoint name, name vLLM looks up)
    biases: list[str] = []
    for tensor in sorted(ins.tensors):
        kind, target = map_name(tensor)
        if kind in ("skip", "d2t", "mask_hidden") or (kind == "param" and target in params):
            continue
        looked_up = target if kind == "unmapped" else f"model.{target}"
        if kind == "param" and target.endswith(".bias"):
            biases.append(tensor)
        elif (
            kind == "param" and target.endswith(_DROPPED) and fact_present("bias_ignored", version)
        ):
            continue  # AutoWeightsLoader's REMOVE_UNUSED_ROTARY_EMBEDS_MAPPER drops them
        else:
            unknown.append((tensor, looked_up))
    at = cite("eagle3_prefixes_model", version)
    if unknown:
        shown = ", ".join(f"{t} (vLLM looks for {u})" for t, u in unknown[:3])
        more = f" and {len(unknown) - 3} more" if len(unknown) > 3 else ""
        prefix = _prefix_fix([t for t, _ in unknown], params)
        refuses = REFUSES.format(v=version) + _refusal(version)
        if prefix:
            return failed(
                name,
                f"{len(unknown)} tensor name(s) carry a '{prefix}' prefix vLLM's EAGLE-3 loader "
                f"does not strip: {shown}{more}; it keeps lm_head/d2t/t2d/mask_hidden names "
                f"as they are and prepends 'model.' to every other ({at}); {refuses}",
                fix=f"save the tensors without the '{prefix}' prefix (fc.weight, midlayer.*, "
                "norm.weight, embed_tokens.weight, lm_head.weight, d2t, t2d, mask_hidden)",
            )
        return failed(
            name,
            f"{shown}{more}: no parameter of vLLM's Llama EAGLE-3 head "
            f"(Eagle3LlamaForCausalLM, {hc.why('num_hidden_layers')}) takes it ({at}); {refuses}",
            fix="remove the tensor(s) the head class does not define, or give config.json "
            "the architecture and layer count the weights were trained with",
        )
    if biases:
        return _biases(name, biases, version)
    return passed(
        name,
        f"{len(ins.tensors)} tensor(s), each loaded by vLLM {version}'s EAGLE-3 loader "
        f"into a parameter of Eagle3LlamaForCausalLM ({at})",
    )


def _refusal(version: VllmVersion) -> str:
    """How the version's LlamaModel refuses a name: AutoWeightsLoader's ValueError (0.26.0
    and newer) or a params_dict KeyError (0.22.0 and older)."""
    mapper = fact_present("eagle3_mapper", version)
    if mapper:
        return " (There is no module or parameter named …)"
    return " (KeyError on the name)" if mapper is False else ""


def _biases(name: str, biases: list[str], version: VllmVersion) -> Check:
    shown = ", ".join(biases[:3]) + (f" and {len(biases) - 3} more" if len(biases) > 3 else "")
    fix = 'set "attention_bias": true in config.json if the head was trained with these biases'
    ignored = fact_present("bias_ignored", version)
    if ignored is False:
        return failed(
            name,
            f"{shown}: config.json does not enable attention_bias, so the head has no bias "
            f"parameter ({cite('eagle3_params_dict', version)} looks it up: KeyError); "
            + REFUSES.format(v=version),
            fix=fix,
        )
    how = (
        f"drops them without a word ({cite('bias_ignored', version)})"
        if ignored
        else "refuses them (0.22.0 and older) or drops them (0.26.0 and newer): not read"
    )
    return warned(
        name,
        f"{shown}: config.json does not enable attention_bias, so vLLM {version} {how}; "
        f"{SILENT.format(v=version)} if the head was trained with them",
        fix=fix,
    )


def _dims(shape: list[int], p: Param) -> tuple[str, str, str] | None:
    """(status, what differs, why) of a tensor against its parameter, None when it fits."""
    built = [d[0] for d in p.dims]
    if len(shape) != len(built):
        return "fail", f"has {len(shape)} dimension(s), vLLM builds {built}", p.dims[0][2]
    for axis, (size, how, why) in enumerate(p.dims):
        have = shape[axis]
        if have == size:
            continue
        kind = ("rows", "columns")[min(axis, 1)]
        if how == "cut" and have > size:
            return (
                "warn",
                f"is {shape}, vLLM builds {built} and keeps the first {size} of its {have} {kind}",
                why,
            )
        return "fail", f"is {shape} but vLLM builds {built}", why
    return None


def check_tensor_shapes(ins: DrafterInspection, version: VllmVersion, arch: str | None) -> Check:
    name = "drafter.tensor_shapes"
    model = _model(ins, version, arch)
    if isinstance(model, str):
        return warned(name, model)
    _hc, params = model
    found: list[tuple[str, str, str, str]] = []
    loaded = loaded_params(ins, params)
    for pname in params:  # the class's order: q, k, v, o, gate, up, down, ...
        tensor = loaded.get(pname)
        if tensor is None or pname in _OTHER_RULES:
            continue
        verdict = _dims(list(ins.tensors[tensor]["shape"]), params[pname])
        if verdict is not None:
            found.append((verdict[0], tensor, verdict[1], verdict[2]))
    fails = [f for f in found if f[0] == "fail"]
    if fails:
        _, tensor, what, why = fails[0]
        more = f" (and {len(fails) - 1} more tensor(s))" if len(fails) > 1 else ""
        return failed(
            name,
            f"{tensor} {what} from {why}{more}: the weights do not fit the head config.json "
            f"describes; {REFUSES.format(v=version)} (shape mismatch when loading)",
            fix=_fix(ins, params, why, _hc),
        )
    if found:
        _, tensor, what, why = found[0]
        more = f" (and {len(found) - 1} more tensor(s))" if len(found) > 1 else ""
        narrows = cite(_NARROWED.get(tensor.rsplit(".", 2)[-2], "qkv_narrowed"), version)
        return warned(
            name,
            f"{tensor} {what} ({why}; {narrows} narrows it){more}: "
            f"{SILENT.format(v=version)}: the cut weights compute something else, so "
            "acceptance collapses",
            fix=_fix(ins, params, why, _hc),
        )
    return passed(name, f"every tensor has the shape vLLM {version} builds from config.json")


# The loader that narrows each projection (parameter.py): q/k/v, o/down, gate/up.
_NARROWED = {
    "o_proj": "row_narrowed",
    "down_proj": "row_narrowed",
    "gate_proj": "merged_narrowed",
    "up_proj": "merged_narrowed",
}


def _fix(ins: DrafterInspection, params: dict[str, Param], why: str, hc: HeadConfig) -> str:
    """The config.json sizes the weights imply (layer 0's q/k/gate rows), where they
    differ from what config.json says or defaults to; else the keys behind `why`."""
    rows = {
        pname.rsplit(".", 2)[-2]: ins.tensors[t]["shape"][0]
        for pname, t in loaded_params(ins, params).items()
        if pname.startswith("layers.0.") and ins.tensors[t]["shape"]
    }
    heads = hc.get("num_attention_heads")
    implied: dict[str, int] = {}
    if "q_proj" in rows and heads and rows["q_proj"] % heads == 0:
        implied["head_dim"] = rows["q_proj"] // heads
        if "k_proj" in rows and rows["k_proj"] % implied["head_dim"] == 0:
            implied["num_key_value_heads"] = rows["k_proj"] // implied["head_dim"]
    if "gate_proj" in rows:
        implied["intermediate_size"] = rows["gate_proj"]
    sets = [f'"{k}": {v}' for k, v in implied.items() if hc.get(k) != v]
    if sets:
        return f"set {', '.join(sets)} in config.json (the sizes its weights hold)"
    return (
        f"make config.json's {_keys(why)} match the weights (use the config.json saved with them)"
    )


def _keys(why: str) -> str:
    words = [w for w in why.replace("(", " ").replace(")", " ").split() if "_" in w]
    keys = list(dict.fromkeys(w.strip(":,") for w in words if not w.startswith("(")))
    return ", ".join(keys) or "sizes"


def _unmapped(ins: DrafterInspection, params: dict[str, Param]) -> bool:
    """Whether some tensor maps to no parameter (drafter.tensor_names fails the head)."""
    for tensor in ins.tensors:
        kind, target = map_name(tensor)
        if kind == "unmapped" or (
            kind == "param" and target not in params and not target.endswith((".bias", *_DROPPED))
        ):
            return True
    return False


_AFTER_NAMES = "not checked: some tensor names do not load (see drafter.tensor_names)"


def check_unloaded(ins: DrafterInspection, version: VllmVersion, arch: str | None) -> Check:
    name = "drafter.unloaded"
    model = _model(ins, version, arch)
    if isinstance(model, str):
        return warned(name, model)
    hc, params = model
    if _unmapped(ins, params):
        return warned(name, _AFTER_NAMES)
    loaded = loaded_params(ins, params)
    borrowed = ("embed_tokens.weight", "lm_head.weight", *_OTHER_RULES)
    missing = [p for p in params if p not in loaded and p not in borrowed]
    if not missing:
        return passed(name, f"every parameter of the head class is loaded ({len(loaded)})")
    layers = sorted({params[p].layer for p in missing if params[p].layer is not None})
    empty = [i for i in layers if not any(params[p].layer == i for p in loaded)]
    silent = (
        f"without an error: its EAGLE-3 load_weights returns None "
        f"({cite('eagle3_load_weights', version)}), so the missing-weights check "
        f"({cite('weights_tracked_only_if_returned', version)}) never runs; "
        f"{SILENT.format(v=version)}: the head drafts from uninitialised memory, so its "
        "acceptance depends on what that memory held at start (garbage collapses it; zeroed "
        "pages can make a missing layer pass its input through) and can differ between "
        "restarts and instances"
    )
    if empty:
        held = sorted({params[p].layer for p in loaded if params[p].layer is not None})
        return warned(
            name,
            f"config.json {hc.why('num_hidden_layers')} but the weights hold layer(s) "
            f"{_span(held)}: vLLM {version} builds layer(s) {_span(empty)} "
            f"({cite('eagle3_layers', version)}) and leaves them uninitialised {silent}",
            fix=(
                f"set num_hidden_layers to {len(held)} (the layers the weights hold), or add "
                f"the missing layers' weights (layers.{empty[0]}.* names)"
                if held
                else f"save the decoder layer's weights (midlayer.* or layers.{empty[0]}.* "
                "names): the weights hold no layer"
            ),
        )
    shown = ", ".join(missing[:4]) + (f" and {len(missing) - 4} more" if len(missing) > 4 else "")
    return warned(
        name,
        f"no tensor for {shown}: vLLM {version} leaves them at their initial values {silent}",
        fix="save every tensor the head was trained with",
    )


def _span(ids: list[int]) -> str:
    return ", ".join(map(str, ids)) if ids else "none"


def check_borrowed(
    ins: DrafterInspection,
    version: VllmVersion,
    arch: str | None,
    target_hidden: int | None,
    target_vocab: int | None,
) -> Check:
    name = "drafter.borrowed"
    model = _model(ins, version, arch)
    if isinstance(model, str):
        return warned(name, model)
    hc, params = model
    if _unmapped(ins, params):
        return warned(name, _AFTER_NAMES)
    loaded = loaded_params(ins, params)
    said: list[str] = []
    fixes: list[str] = []
    h = hc.get("hidden_size")
    if "embed_tokens.weight" not in loaded:
        width = (
            f"; its width {target_hidden} differs from the head's hidden_size {h}, so the "
            "head's own embedding stays uninitialised"
            if target_hidden is not None and target_hidden != h
            else ""
        )
        said.append(
            f"no embed_tokens.weight: vLLM {version} embeds the draft tokens with the "
            f"target's embeddings ({cite('share_embed_tokens', version)}){width}"
        )
        fixes.append("save the head's embed_tokens.weight if it was trained with its own")
    if "lm_head.weight" not in loaded:
        tied = (
            "config.json ties lm_head to embed_tokens (tie_word_embeddings) but vLLM does not "
            "tie them for an EAGLE-3 head: "
            if hc.values.get("tie_word_embeddings")
            else ""
        )
        dv = hc.get("draft_vocab_size") or hc.get("vocab_size")
        rows = (
            f"; the target's lm_head has {target_vocab} rows where d2t maps {dv} draft ids"
            if target_vocab is not None and dv != target_vocab
            else ""
        )
        said.append(
            f"no lm_head.weight: {tied}vLLM {version} scores the drafts with the target's "
            f"lm_head ({cite('share_lm_head', version)}){rows}"
        )
        fixes.append("save lm_head.weight (for a tied head: a copy of its embed_tokens.weight)")
    if not said:
        return passed(name, "the head has its own embed_tokens and lm_head")
    return warned(
        name,
        "; ".join(said)
        + f": {SILENT.format(v=version)} unless the head was trained with the target's; "
        "acceptance collapses otherwise",
        fix="; ".join(fixes),
    )
