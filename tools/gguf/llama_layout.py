"""How llama.cpp's converter (convert_hf_to_gguf.py) lays out a Hugging Face llama in GGUF: the
tensor names and the q/k row order its RoPE expects. Shared by tests/gguf_reference.py (which
checks the loader against files written this way) and bench/llamacpp_compare.py."""

TOP = {"model.embed_tokens.weight": "token_embd.weight", "model.norm.weight": "output_norm.weight",
       "lm_head.weight": "output.weight"}
LAYER = {"input_layernorm": "attn_norm", "self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k",
         "self_attn.v_proj": "attn_v", "self_attn.o_proj": "attn_output",
         "post_attention_layernorm": "ffn_norm", "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up",
         "mlp.down_proj": "ffn_down"}


def gguf_name(hf):
    """The GGUF name of a Hugging Face llama tensor name."""
    if hf in TOP:
        return TOP[hf]
    parts = hf.split(".")
    return f"blk.{parts[2]}.{LAYER['.'.join(parts[3:-1])]}.{parts[-1]}"


def permute(w, heads):
    """q_proj / k_proj rows in the order the converter writes them (its RoPE pairs neighbours)."""
    return w.reshape(heads, 2, w.shape[0] // heads // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def unpermute(w, heads):
    """The inverse of permute: the Hugging Face row order back."""
    return w.reshape(heads, w.shape[0] // heads // 2, 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)
