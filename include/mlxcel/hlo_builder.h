// mlxcel-xla StableHLO builder API (typed op constructors with shape inference).
// Included by mlxcel/hlo.h; do not include directly.
#ifndef MLXCEL_HLO_BUILDER_H
#define MLXCEL_HLO_BUILDER_H

#endif  // MLXCEL_HLO_BUILDER_H
