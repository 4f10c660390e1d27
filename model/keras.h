/* Internal to model/: the Keras HDF5 importer (model/keras.c) as the ONNX
 * loader and editor reach it, and the graph store's owned-bytes load.
 * Covered by tests/test_keras.c and tests/keras_test.py. */
#ifndef PTQ_MODEL_KERAS_H
#define PTQ_MODEL_KERAS_H

#include <stddef.h>

#include "ptq/graph.h"

/* 1 when bytes [n] start with the HDF5 signature (a Keras .h5 model, or
 * another HDF5 file the importer then names). */
int ptq_keras_is_hdf5(const void *bytes, size_t n);

/* Loads the ONNX model in bytes (malloc'd; the graph owns them from here,
 * whatever happens) as if read from path. model/onnx_load.c. */
ptq_status ptq_graph_load_onnx_owned(ptq_ctx *ctx, const char *path, void *bytes, size_t n_bytes, ptq_graph **out);

#endif
