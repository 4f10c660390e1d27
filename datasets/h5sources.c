/* The other files an HDF5 set reads (--allow-external-data): external
 * links, external raw storage and virtual-dataset sources, found as
 * libhdf5 1.10 looks for them, for the commands' same-file check of their
 * outputs; and a virtual dataset's sources checked at open, since libhdf5
 * reads a missing one as fill values; and the content SHA-256 that covers
 * them. Covered by tests/datasets_test.py and tests/cli_hardening_test.py. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "datasets/datasets_internal.h"
#include "ptq/hash.h"

#define SRC_MAX_FILES 4096 /* listed at most: a file naming more is refused */
#define SRC_MAX_DEPTH 8    /* external links followed into groups, at most this deep */

static int is_file(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISREG(sb.st_mode);
}

/* path's folder ("." when it has none) into out[n]. */
static void folder_of(const char *path, char *out, size_t n)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        snprintf(out, n, ".");
    else
        snprintf(out, n, "%.*s", (int)(slash == path ? 1 : slash - path), path);
}

/* prefix (with a leading ${ORIGIN} standing for origin's folder) + "/" + name into out[n]; 0 when too long. */
static int join_prefix(const char *prefix, size_t n_prefix, const char *origin, const char *name, char *out, size_t n)
{
    char dir[4096];
    if (n_prefix >= 9 && strncmp(prefix, "${ORIGIN}", 9) == 0) {
        folder_of(origin, dir, sizeof dir);
        return snprintf(out, n, "%s%.*s/%s", dir, (int)(n_prefix - 9), prefix + 9, name) < (int)n;
    }
    return snprintf(out, n, "%.*s/%s", (int)n_prefix, prefix, name) < (int)n;
}

/* The file named target that libhdf5 opens for an external link or a
 * virtual dataset's source in the file origin (H5F_prefix_open_file): an
 * absolute target as it is, else (or its last component, when that is
 * missing) under each folder of the env prefix (':'-separated), in
 * origin's folder, then from the working folder. The first that exists
 * into out[n]: 1, or 0 when none does. */
static int resolve_source(const char *origin, const char *target, const char *env, char *out, size_t n)
{
    const char *name = target;
    if (target[0] == '/') {
        if (is_file(target)) {
            snprintf(out, n, "%s", target);
            return 1;
        }
        name = strrchr(target, '/') + 1;
    }
    const char *prefixes = getenv(env);
    for (const char *p = prefixes; p && *p;) {
        size_t len = strcspn(p, ":");
        if (len && join_prefix(p, len, origin, name, out, n) && is_file(out))
            return 1;
        p += len + (p[len] == ':');
    }
    if (origin[0] == '/' || strchr(origin, '/')) {
        char dir[4096];
        folder_of(origin, dir, sizeof dir);
        if (snprintf(out, n, "%s/%s", dir, name) < (int)n && is_file(out))
            return 1;
    }
    return snprintf(out, n, "%s", name) < (int)n && is_file(out);
}

/* An external raw storage file of a dataset in origin (H5D__efl_read): under
 * HDF5_EXTFILE_PREFIX when set, else as named, from the working folder. */
static int resolve_efile(const char *origin, const char *name, char *out, size_t n)
{
    const char *prefix = getenv("HDF5_EXTFILE_PREFIX");
    if (prefix && *prefix)
        return join_prefix(prefix, strlen(prefix), origin, name, out, n) && is_file(out);
    return snprintf(out, n, "%s", name) < (int)n && is_file(out);
}

/* The name of the file holding object o (where an external link led), malloc'd; NULL if unknown. */
static char *file_name_of(hid_t o)
{
    ssize_t len = H5Fget_name(o, NULL, 0);
    char *name = len > 0 ? malloc((size_t)len + 1) : NULL;
    if (name && H5Fget_name(o, name, (size_t)len + 1) < 0) {
        free(name);
        name = NULL;
    }
    return name;
}

ptq_status ds_h5_check_sources(ptq_ctx *ctx, hid_t d, const char *key, const char *path)
{
    hid_t dcpl = H5Dget_create_plist(d);
    size_t n_maps = 0;
    ptq_status st = PTQ_OK;
    if (dcpl < 0 || H5Pget_layout(dcpl) != H5D_VIRTUAL || H5Pget_virtual_count(dcpl, &n_maps) < 0)
        n_maps = 0;
    char *origin = n_maps ? file_name_of(d) : NULL;
    for (size_t i = 0; st == PTQ_OK && i < n_maps; i++) {
        char file[1024] = "", dset[1024] = "", found[4096];
        H5Pget_virtual_filename(dcpl, i, file, sizeof file);
        H5Pget_virtual_dsetname(dcpl, i, dset, sizeof dset);
        if (strchr(file, '%') || strchr(dset, '%'))
            continue; /* a printf-style mapping of an unlimited dataset: its sources are found as it grows */
        hid_t src = -1;
        if (strcmp(file, ".") == 0)
            src = H5Iget_file_id(d);
        else if (resolve_source(origin ? origin : path, file, "HDF5_VDS_PREFIX", found, sizeof found))
            src = H5Fopen(found, H5F_ACC_RDONLY, H5P_DEFAULT);
        else
            st = ptq_fail(ctx, PTQ_ERR_IO, "'%s' in %s is a virtual dataset mapping '%s' in %s, which does not "
                          "exist: its samples would read as zeros", key, path, dset, file);
        if (st == PTQ_OK && (src < 0 || !ds_h5_exists(src, dset)))
            st = ptq_fail(ctx, PTQ_ERR_IO, "'%s' in %s is a virtual dataset mapping '%s' in %s, which %s: its "
                          "samples would read as zeros", key, path, dset, strcmp(file, ".") == 0 ? path : found,
                          src < 0 ? "cannot be opened as HDF5" : "has no such dataset");
        if (src >= 0)
            H5Fclose(src);
    }
    free(origin);
    if (dcpl >= 0)
        H5Pclose(dcpl);
    return st;
}

/* The files listed so far. */
typedef struct src_list {
    char **files;
    int n, cap;
    int too_many; /* more than SRC_MAX_FILES */
    int depth;    /* external links into groups followed */
} src_list;

static void list_add(src_list *l, const char *file)
{
    for (int i = 0; i < l->n; i++)
        if (strcmp(l->files[i], file) == 0)
            return;
    if (l->n == SRC_MAX_FILES) {
        l->too_many = 1;
        return;
    }
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 16;
        char **grown = realloc(l->files, (size_t)cap * sizeof *grown);
        if (!grown)
            return;
        l->files = grown;
        l->cap = cap;
    }
    if ((l->files[l->n] = strdup(file)))
        l->n++;
}

/* Dataset d's external raw storage files and virtual-dataset sources that exist. */
static void list_dataset(src_list *l, hid_t d)
{
    hid_t dcpl = H5Dget_create_plist(d);
    char *origin = file_name_of(d);
    char found[4096];
    if (dcpl < 0 || !origin)
        goto done;
    const int n_ext = H5Pget_external_count(dcpl);
    for (int i = 0; i < n_ext; i++) {
        char name[4096] = "";
        off_t offset;
        hsize_t size;
        if (H5Pget_external(dcpl, (unsigned)i, sizeof name, name, &offset, &size) >= 0 &&
            resolve_efile(origin, name, found, sizeof found))
            list_add(l, found);
    }
    size_t n_maps = 0;
    if (H5Pget_layout(dcpl) == H5D_VIRTUAL && H5Pget_virtual_count(dcpl, &n_maps) >= 0)
        for (size_t i = 0; i < n_maps; i++) {
            char file[1024] = "";
            H5Pget_virtual_filename(dcpl, i, file, sizeof file);
            if (strcmp(file, ".") != 0 && resolve_source(origin, file, "HDF5_VDS_PREFIX", found, sizeof found))
                list_add(l, found);
        }
done:
    free(origin);
    if (dcpl >= 0)
        H5Pclose(dcpl);
}

static herr_t list_link(hid_t group, const char *name, const H5L_info_t *info, void *data);

/* Object o: a dataset's files; a group reached through an external link, its links. */
static void list_object(src_list *l, hid_t o, int via_external)
{
    if (H5Iget_type(o) == H5I_DATASET) {
        list_dataset(l, o);
    } else if (via_external && H5Iget_type(o) == H5I_GROUP && l->depth < SRC_MAX_DEPTH) {
        l->depth++;
        H5Lvisit(o, H5_INDEX_NAME, H5_ITER_INC, list_link, l);
        l->depth--;
    }
}

static herr_t list_link(hid_t group, const char *name, const H5L_info_t *info, void *data)
{
    src_list *l = data;
    if (info->type != H5L_TYPE_HARD && info->type != H5L_TYPE_EXTERNAL)
        return 0; /* a soft link names a path in this file, whose links are walked too */
    hid_t o = H5Oopen(group, name, H5P_DEFAULT); /* through an external link: its target, where libhdf5 finds it */
    if (o < 0)
        return 0;
    if (info->type == H5L_TYPE_EXTERNAL) {
        char *target = file_name_of(o);
        if (target)
            list_add(l, target);
        free(target);
    }
    list_object(l, o, info->type == H5L_TYPE_EXTERNAL);
    H5Oclose(o);
    return l->too_many ? 1 : 0;
}

ptq_status ds_h5_external_files(ptq_ctx *ctx, hid_t file, const char *path, char ***files, int *n_files)
{
    src_list l;
    memset(&l, 0, sizeof l);
    H5Lvisit(file, H5_INDEX_NAME, H5_ITER_INC, list_link, &l);
    if (l.too_many) {
        ptq_dataset_files_free(l.files, l.n);
        return ptq_fail(ctx, PTQ_ERR_FORMAT, "%s refers to more than %d other files; refused", path, SRC_MAX_FILES);
    }
    *files = l.files;
    *n_files = l.n;
    return PTQ_OK;
}

ptq_status ptq_dataset_external_files(ptq_ctx *ctx, const char *path, char ***files, int *n_files)
{
    *files = NULL;
    *n_files = 0;
    PTQ_TRY_RET(ptq_h5_register_zstd(ctx));
    ds_h5_quiet q;
    ds_h5_quiet_begin(&q);
    if (H5Fis_hdf5(path) <= 0) {
        ds_h5_quiet_end(&q);
        return PTQ_OK;
    }
    ptq_status st = ds_h5_vet(ctx, path, 0);
    hid_t file = st == PTQ_OK ? H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT) : -1;
    if (file >= 0) {
        st = ds_h5_external_files(ctx, file, path, files, n_files);
        H5Fclose(file);
    }
    ds_h5_quiet_end(&q);
    return st;
}

ptq_status ds_h5_content_sha256(ptq_ctx *ctx, const char *path, char *const *files, int n_files, char hex[65])
{
    static const char tag[] = "ptq-hdf5-external-data";
    PTQ_TRY_RET(ptq_sha256_file(ctx, path, hex));
    if (n_files == 0)
        return PTQ_OK;
    unsigned char *buf = malloc((size_t)1 << 16);
    if (!buf)
        return ptq_fail(ctx, PTQ_ERR_NOMEM, "hashing %s: out of memory", path);
    ptq_status st = PTQ_OK;
    ptq_sha256 h;
    ptq_sha256_init(&h);
    ptq_sha256_update(&h, tag, sizeof tag); /* with its NUL */
    ptq_sha256_update(&h, hex, 64);
    for (int i = 0; i < n_files && st == PTQ_OK; i++) {
        FILE *f = NULL;
        PTQ_TRY(st, ptq_file_fopen_read(ctx, files[i], &f), done);
        struct stat sb;
        const uint64_t size = fstat(fileno(f), &sb) == 0 ? (uint64_t)sb.st_size : 0;
        uint64_t total = 0;
        unsigned char le[8];
        for (int b = 0; b < 8; b++)
            le[b] = (unsigned char)(size >> (8 * b));
        ptq_sha256_update(&h, le, 8); /* the size first: one file's bytes cannot run into the next's */
        for (size_t got; (got = fread(buf, 1, (size_t)1 << 16, f)) > 0; total += got)
            ptq_sha256_update(&h, buf, got);
        if (ferror(f) || total != size)
            st = ptq_fail(ctx, PTQ_ERR_IO, "cannot read %s, which %s reads (or it changed while read)", files[i],
                          path);
        fclose(f);
    }
    if (st == PTQ_OK)
        ptq_sha256_final_hex(&h, hex);
done:
    free(buf);
    return st;
}

ptq_status ptq_dataset_file_sha256(ptq_ctx *ctx, const char *path, int allow_external_data, char hex[65])
{
    char **files = NULL;
    int n_files = 0;
    if (allow_external_data)
        PTQ_TRY_RET(ptq_dataset_external_files(ctx, path, &files, &n_files));
    ptq_status st = ds_h5_content_sha256(ctx, path, files, n_files, hex);
    ptq_dataset_files_free(files, n_files);
    return st;
}

void ptq_dataset_files_free(char **files, int n_files)
{
    if (!files) /* a no-op, whatever the count, as every _free of NULL */
        return;
    for (int i = 0; i < n_files; i++)
        free(files[i]);
    free(files);
}
