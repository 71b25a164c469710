/* lra/abi.h — the C-level plugin ABI of the lrahost SDK (v1).
 *
 * Every plugin carries one `lra_plugin_info` record in an ELF section named
 * ".lra_plugin". The host reads that record straight from the file, checks
 * compatibility, and only then dlopen()s the library and calls the single
 * exported entry point `lra_plugin_entry`. An incompatible or foreign .so
 * therefore never runs one static constructor.
 *
 * Layout rules: the first three fields never move; fields are only ever
 * appended (struct_size says how many the plugin knows); the record holds no
 * pointers so it needs no relocation and can be read from the file as is.
 */
#ifndef LRA_ABI_H
#define LRA_ABI_H

#include <stdint.h>

#define LRA_ABI_MAJOR 1
#define LRA_ABI_MINOR 7  /* 1: MixerSpec::rotary_base, LRA_CAP_ROTARY; 2: Mixer::optimizer_hints;
                           3: Mixer::decodes, decode_start, decode_step;
                           4: Dataset::sequence (per-position targets of sequence tasks);
                           5: SequenceTargets::readout (targets decoded from the last state);
                           6: Mixer::prefill, prefills_in_parallel (a prompt's state in one call);
                           7: LRA_CAP_GRAPH_SAFE (training updates captured in a CUDA graph) */

#define LRA_PLUGIN_MAGIC 0x5041524Cu /* "LRAP" little-endian */
#define LRA_PLUGIN_SECTION ".lra_plugin"
#define LRA_PLUGIN_ENTRY_SYMBOL "lra_plugin_entry"

#if defined(_WIN32)
#define LRA_EXPORT __declspec(dllexport)
#else
#define LRA_EXPORT __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* What a plugin provides. */
enum lra_plugin_kind {
  LRA_KIND_MIXER = 1, /* a token-mixing layer (attention or otherwise) */
  LRA_KIND_TASK = 2   /* a dataset with splits, vocabulary and labels */
};

/* Optional mixer capabilities (bit flags). */
enum lra_capability {
  LRA_CAP_CAUSAL = 1u << 0,          /* supports causal (autoregressive) masking */
  LRA_CAP_ATTENTION_PROBS = 1u << 1, /* can return its attention probabilities */
  LRA_CAP_PADDING_MASK = 1u << 2,    /* honours the key padding mask exactly */
  LRA_CAP_ROTARY = 1u << 3,          /* applies rotary positions to queries and keys (lra/rotary.h) */
  LRA_CAP_GRAPH_SAFE = 1u << 4       /* forward and backward may be captured in a CUDA graph and replayed:
                                        no host synchronisation, no host decision on a tensor's values,
                                        random numbers only from ATen's CUDA generator (docs/abi.md) */
};

typedef struct lra_plugin_info {
  uint32_t struct_size; /* offset 0: sizeof(lra_plugin_info) as the plugin knew it */
  uint16_t abi_major;   /* offset 4: must equal the host's */
  uint16_t abi_minor;   /* offset 6: must be <= the host's */
  uint32_t magic;       /* offset 8: LRA_PLUGIN_MAGIC */
  uint32_t kind;        /* enum lra_plugin_kind */
  uint32_t capabilities;
  /* Build facts that break C++ compatibility (compared before loading). */
  int32_t cxx11_abi;       /* _GLIBCXX_USE_CXX11_ABI of the plugin's build */
  char torch_version[32];  /* "MAJOR.MINOR.PATCH" of the LibTorch headers */
  char stdlib[32];         /* C++ standard library family and release, e.g. "libstdc++ 12" */
  char compiler[64];       /* informational: compiler and version */
  /* Identity. */
  char name[64];
  char version[32];
  char description[256];
} lra_plugin_info;

/* Returned by the exported entry point once the host has accepted the info. */
typedef struct lra_plugin_api {
  uint32_t struct_size;
  uint16_t abi_major;
  uint16_t abi_minor;
  const lra_plugin_info* info; /* the same record as in the section */
  const void* interface;       /* kind-specific C++ interface: lra::MixerPlugin or lra::TaskPlugin */
} lra_plugin_api;

typedef const lra_plugin_api* (*lra_plugin_entry_fn)(void);

#ifdef __cplusplus
}
#endif

#endif /* LRA_ABI_H */
