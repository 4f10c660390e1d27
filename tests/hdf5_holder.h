/* A thread that holds libhdf5's lock in turns, as one reading a data set
 * does (an iteration callback that sleeps inside the call), for the tests of
 * the HDF5 check beside other threads: tests/test_h5vet_threads.c and
 * tests/test_api_threads.c. Start holder(path) on a thread; set stop to end
 * it; turns counts the callbacks. */
#ifndef PTQ_TESTS_HDF5_HOLDER_H
#define PTQ_TESTS_HDF5_HOLDER_H

#include <hdf5.h>
#include <stdatomic.h>
#include <unistd.h>

static atomic_int stop, turns;

/* Holds libhdf5's lock for 20 ms (a call's callback runs inside the call). */
static herr_t hold(hid_t group, const char *name, const H5L_info_t *info, void *data)
{
    (void)group, (void)name, (void)info, (void)data;
    atomic_fetch_add(&turns, 1);
    usleep(20000);
    return 1;
}

/* Takes the lock in turns, as a thread reading a data set does, until stop. */
static void *holder(void *arg)
{
    hid_t f = H5Fopen((const char *)arg, H5F_ACC_RDONLY, H5P_DEFAULT);
    while (f >= 0 && !atomic_load(&stop)) {
        H5Literate(f, H5_INDEX_NAME, H5_ITER_INC, NULL, hold, NULL);
        usleep(200);
    }
    if (f >= 0)
        H5Fclose(f);
    return NULL;
}

#endif
