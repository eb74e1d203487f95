//! What a LoRA or QLoRA run on a mixture of experts does that a user would not expect, said in
//! the estimate's notes with its bytes computed (`targets` has the sources): which modules PEFT
//! adapts, the merged copies `lora.ParamWrapper` makes of adapted experts, and the experts
//! QLoRA leaves unquantized in float32.

use super::targets;
use crate::estimate::arch::{Architecture, Mlp};
use crate::estimate::lora_targets::LoraModule;
use crate::estimate::scenario::Scenario;

/// Bytes in a GiB.
const GIB: f64 = (1u64 << 30) as f64;

/// The notes for `s` on `a` (none unless `a` is a mixture of experts with LoRA).
pub(crate) fn peft_notes(a: &Architecture, s: &Scenario) -> Vec<String> {
    let Mlp::Moe(m) = &a.mlp else {
        return Vec::new();
    };
    if s.lora_rank == 0 {
        return Vec::new();
    }
    let Ok(modules) = s.lora_targets.resolve(a) else {
        return Vec::new();
    };
    let (e, h, i, l) = (m.experts, a.hidden, m.expert.intermediate, a.layers);
    let elements = |x: u64| x as f64;
    let experts = elements(e) * 3.0 * elements(i) * elements(h) * elements(l);
    let share = experts / elements(a.parameter_count().max(1)) * 100.0;
    let mut notes = Vec::new();
    let gate_up = modules.contains(&LoraModule::ExpertsGateUp);
    let down = modules.contains(&LoraModule::ExpertsDown);
    if gate_up || down {
        let bytes = if s.load_in_4bit || !s.pure_bf16 {
            4.0
        } else {
            2.0
        };
        let per_layer = elements(e)
            * elements(h)
            * elements(i)
            * (if gate_up { 2.0 } else { 0.0 } + if down { 1.0 } else { 0.0 })
            * bytes;
        let kept = if s.grad_checkpoint || s.load_in_4bit {
            "one recomputed layer's at a time under gradient checkpointing".to_owned()
        } else {
            format!(
                "every layer's kept for backward without gradient checkpointing ({:.2} GiB)",
                per_layer * elements(l) / GIB
            )
        };
        notes.push(format!(
            "{}: PEFT 0.21.2 adapts the experts' 3-D parameters (transformers 5.24) through \
             lora.ParamWrapper{}, which merges W + B·A into a copy of the whole parameter on every \
             forward: {:.2} GiB per layer, {kept}",
            a.name,
            if gate_up {
                " (gate_up_proj at rank 2·lora_rank)"
            } else {
                ""
            },
            per_layer / GIB
        ));
    } else if !targets::converted(a) && s.lora_targets.all_linear() {
        notes.push(format!(
            "{}: all-linear reaches the attention, the shared expert and its gate only: the \
             {e} experts of each layer are 3-D parameters and transformers 5.24 has no \
             conversion for qwen2_moe, so PEFT 0.21.2 leaves them without adapters",
            a.name
        ));
    }
    if s.load_in_4bit {
        notes.push(format!(
            "{}: bitsandbytes quantizes nn.Linear layers only: the experts ({share:.1} % of the \
             parameters) and the routers stay unquantized, and prepare_model_for_kbit_training \
             casts them to float32 ({:.2} GiB of experts): this QLoRA keeps most of the model in \
             32 bits, whatever the load dtype, the batch or the LoRA targets (targets that leave \
             the experts alone only spare their merged copies). What would shrink them is outside \
             transformers 5.24's QLoRA and not modelled: experts built as nn.Linear modules, as \
             transformers 4.x built them, which bitsandbytes quantizes to 4 bits, or the model \
             split across GPUs",
            a.name,
            experts * 4.0 / GIB
        ));
    }
    notes
}
