//! Other tools' names for vramdoc's scenario keys, for the error an unknown key gets: people
//! paste `TrainingArguments`, PEFT, axolotl or LLaMA-Factory settings, and the error says which
//! key is theirs (or that the setting does not change memory) instead of only listing keys.
//! Nothing here is accepted as a key: each tool's setting may mean something a little
//! different (`max_length` truncates, `block_size` is every row's length), so the user says it.

/// `(their name, the hint)`: the hint follows the name in the error, naming vramdoc's key.
const SYNONYMS: &[(&str, &str)] = &[
    ("gradient_checkpointing", "is TrainingArguments' name for vramdoc's `grad_checkpoint` (--set grad_checkpoint=True)"),
    ("per_device_train_batch_size", "is TrainingArguments' name for vramdoc's `batch_size`, the sequences of one forward pass"),
    ("micro_batch_size", "is axolotl's name for vramdoc's `batch_size`, the sequences of one forward pass"),
    ("train_batch_size", "is the batch of a whole step: vramdoc's `batch_size` is one forward pass's, `gradient_accumulation_steps` the passes per step"),
    ("max_seq_length", "is TRL's name for vramdoc's `block_size`, the length of every row"),
    ("max_length", "is vramdoc's `block_size` in training (every row's length) and, generating, --prompt_tokens with --max_new_tokens"),
    ("max_seq_len", "is vramdoc's `block_size`, the length of every row"),
    ("seq_len", "is vramdoc's `block_size`, the length of every row"),
    ("sequence_len", "is axolotl's name for vramdoc's `block_size`, the length of every row"),
    ("cutoff_len", "is LLaMA-Factory's name for vramdoc's `block_size`, the length of every row"),
    ("context_length", "is vramdoc's `block_size` in training and, generating, --prompt_tokens with --max_new_tokens"),
    ("optim", "is TrainingArguments' name for vramdoc's `optimizer` (adamw, adamw8bit, paged_adamw8bit, sgd)"),
    ("bf16", "is TrainingArguments' bf16=True, vramdoc's `dtype` bfloat16 (autocast; --set dtype=bfloat16)"),
    ("fp16", "is TrainingArguments' fp16=True, vramdoc's `dtype` float16 (autocast; --set dtype=float16)"),
    ("torch_dtype", "is from_pretrained's name for vramdoc's `weights_dtype`"),
    ("r", "is PEFT's LoraConfig name for vramdoc's `lora_rank`"),
    ("lora_r", "is vramdoc's `lora_rank`"),
    ("target_modules", "is PEFT's LoraConfig name for vramdoc's `lora_targets`"),
    ("lora_target_modules", "is vramdoc's `lora_targets`"),
    ("lora_target", "is LLaMA-Factory's name for vramdoc's `lora_targets`"),
    ("lora_alpha", "scales the adapters' output and changes no memory: leave it out"),
    ("nproc_per_node", "is torchrun's --nproc-per-node, vramdoc's `ddp_world_size`"),
    ("world_size", "is vramdoc's `ddp_world_size`, the processes of a torchrun job"),
    ("load_in_4bits", "is spelled `load_in_4bit`"),
    ("quantization_bit", "is LLaMA-Factory's: 4 is vramdoc's `load_in_4bit` True, 8 its `load_in_8bit` True"),
    ("packing", "is TRL's SFTConfig packing: True with packing_strategy \"wrapped\" is vramdoc's `batch_layout` full, True with its default \"bfd\" `batch_layout` padding_free, False (its default) `batch_layout` padded"),
    ("padding_free", "is TRL's SFTConfig(padding_free=True), vramdoc's `batch_layout` padding_free"),
    ("packing_strategy", "is TRL's: \"wrapped\" is vramdoc's `batch_layout` full, \"bfd\" `batch_layout` padding_free"),
    ("use_flash_attention_2", "is from_pretrained's old flag for attn_implementation=\"flash_attention_2\", vramdoc's `attn_implementation`"),
    ("num_train_epochs", "changes no memory: leave it out"),
    ("learning_rate", "changes no memory: leave it out"),
    ("warmup_steps", "changes no memory: leave it out"),
    ("weight_decay", "changes no memory: leave it out"),
];

/// The hint for `key` when it is no scenario key but another tool's name for one, ending in
/// "; " to go before the list of keys; empty when there is none.
pub(crate) fn hint(key: &str) -> String {
    let key = key.trim().trim_start_matches('-').replace('-', "_");
    SYNONYMS
        .iter()
        .find(|(name, _)| name.eq_ignore_ascii_case(&key))
        .map_or_else(String::new, |(name, hint)| format!("`{name}` {hint}; "))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every key a hint names exists, so no hint sends the user to a key that fails too.
    #[test]
    fn every_key_a_hint_names_is_a_scenario_key() {
        for (name, hint) in SYNONYMS {
            assert!(!super::super::keys::is_key(name), "{name} is a key itself");
            for named in hint.split('`').skip(1).step_by(2) {
                assert!(super::super::keys::is_key(named), "{name}: `{named}`");
            }
        }
    }

    #[test]
    fn spellings_with_dashes_and_capitals_find_their_hint() {
        assert!(hint("gradient-checkpointing").contains("`grad_checkpoint`"));
        assert!(hint("--Per_Device_Train_Batch_Size").contains("`batch_size`"));
        assert_eq!(hint("n_layer"), "");
    }
}
