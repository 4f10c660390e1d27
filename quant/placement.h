/* Q/DQ placement (include/ptq/plan.h ptq_placement): which activations a
 * plan quantizes, by the rule table of quant/placement.c; every decision
 * names its rule. Used by quant/plan.c; covered by tests/test_placement.c. */
#ifndef PTQ_QUANT_PLACEMENT_H
#define PTQ_QUANT_PLACEMENT_H

#include "ptq/plan.h"

/* What a rule does with the tensors it matches. */
typedef enum place_action {
    PLACE_NONE = 0, /* not an activation: no rule applies */
    PLACE_CORE,     /* the core precision, with the tensor's own calibrated scale */
    PLACE_SHARE,    /* the core precision with the scale of another tensor (place.share) */
    PLACE_FP16,     /* half precision */
    PLACE_FP32      /* left as it is */
} place_action;

typedef struct place_decision {
    const char *rule;    /* the rule's name (static), NULL with PLACE_NONE */
    place_action action;
    int share;           /* PLACE_SHARE: the value whose scale it takes; else -1 */
} place_decision;

/* edge[g->n_values] = 1 for the inputs and outputs of the first and last
 * compute layers (PTQ_OPF_WEIGHTED nodes in graph order), 0 elsewhere. */
void ptq_placement_edges(const ptq_graph *g, unsigned char *edge);

/* out[g->n_values]: the decision for every float activation of g (a
 * non-constant value a node produces or the graph is fed) under placement
 * pl for the activations' core precision core (uint8: asymmetric, which
 * changes the ort placement); edge (may be NULL: none) from
 * ptq_placement_edges. */
ptq_status ptq_placement_decide(ptq_ctx *ctx, const ptq_graph *g, ptq_placement pl, ptq_prec core,
                                const unsigned char *edge, place_decision *out);

/* Whether the rule named rule fits a plan entry: PTQ_PLACEMENT_* for the rules of that placement alone, -1 for
 * those of every placement (edge, weight, weight.follows-input, and all.observed, which also marks an observed
 * tensor no rule of trt or ort covers), -2 for a name the table does not have; *weights_only (may be NULL) 1 for
 * the rules of weights (weight, weight.follows-input), which name no activation, while the rules of one
 * placement name no weight. */
int ptq_placement_rule_owner(const char *rule, int *weights_only);

/* The names of the rules for weights: on a first or last compute layer, elsewhere. */
#define PTQ_RULE_EDGE "edge"
#define PTQ_RULE_WEIGHT "weight"
/* The rule keeping a weight in high precision because its op reads no quantized activation. */
#define PTQ_RULE_WEIGHT_FOLLOWS "weight.follows-input"
/* The rule keeping an activation the archive gave no range in high precision: it had no values (always empty). */
#define PTQ_RULE_NO_RANGE "archive.no-range"
/* The rule keeping a transformer's LayerNorm, Softmax and residual Add outputs in FP16. */
#define PTQ_RULE_FP16_TRANSFORMER "trt.fp16-transformer"

#endif
