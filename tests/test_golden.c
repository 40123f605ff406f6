// Golden values: THE FILE AND FORMAT COMPATIBILITY CONTRACT.
//
// Everything below is pinned to hard-coded values computed once from the
// implementation (then sanity-checked against the documentation by hand:
// the CRC32C and byte layout of section 7, the splitmix64 cross formula of
// section 13, log1p for the dense rule, the categorical rule of the header
// comment). These values are what .wdr files, .wdm checkpoints and models
// trained by this version mean. The GPU backend must reproduce the ids, cross
// buckets, dense values and decoded records bit for bit (its GEMMs need not
// match the CPU's summation order: predictions are pinned for the CPU build).
//
// If a test here fails after a change, then EITHER the change is a bug (fix
// the change, not the expected value) OR it deliberately changes the id hash,
// the count feature, the cross hash, the file layout or the model arithmetic:
// then the format version must change (a new WD__VERSION / WD__WDM_VERSION,
// new fixtures written by tests/golden/make_golden.c under new names, new
// pinned values), and the version-1 fixtures in tests/golden/ must keep
// loading (or be refused with WD_ERR_FORMAT, if support is dropped on
// purpose). Never regenerate tests/golden/v1.* to make this test pass.
//
// Usage: test_golden [TMPDIR [GOLDEN_DIR]]   (GOLDEN_DIR: default
// tests/golden, found from the working directory or from the binary's path)
//
// The predictions are pinned bit for bit for the test build (C11, the
// portable GEMM loop nest, no -ffast-math, glibc's expf; also checked with
// -O2 and -O3 -march=native; `make test` runs it as test_golden_portable).
// A build with a GEMM engine (WD_USE_ONEDNN or WD_USE_CBLAS) sums the GEMMs
// in another order: there the hand-built batch is compared within 1e-6 and
// the per-file prediction checksum is not checked.
// the implementation is linked in (tests/impl.c); this file uses the declarations only
#define WIDEDEEP_INTERNAL   // wd_model_view, wd_cross_bucket (tests/ref.h): the header's tier 3
#include "../widedeep.h"
#include "testlib.h"
#include <inttypes.h>
#include <math.h>
#include <zstd.h>

static char TMP[512] = "/tmp";
static char GOLD[512] = "";

// ---- helpers ---------------------------------------------------------------------------
#define FNV0 0xcbf29ce484222325ull
static uint64_t fnv(uint64_t h, const void *p, size_t n) {   // FNV-1a, 64-bit
    const unsigned char *c = (const unsigned char *)p;
    for (size_t i = 0; i < n; i++) { h ^= c[i]; h *= 0x100000001b3ull; }
    return h;
}
static uint32_t fbits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static float bitsf(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
static uint32_t le32(const unsigned char *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }
static uint64_t le64(const unsigned char *p) { return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32; }
// CRC32C (Castagnoli, reflected 0x82F63B78), bit by bit: independent of the library's tables.
static uint32_t ref_crc32c(const void *p, size_t n) {
    const unsigned char *c = (const unsigned char *)p;
    uint32_t crc = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; i++) {
        crc ^= c[i];
        for (int k = 0; k < 8; k++) crc = (crc >> 1) ^ (0x82F63B78u & (0u - (crc & 1u)));
    }
    return ~crc;
}
// The cross hash exactly as section 13 documents it.
static uint64_t ref_mix64(uint64_t x) {
    x ^= x >> 30; x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27; x *= 0x94d049bb133111ebull;
    x ^= x >> 31;
    return x;
}
static uint32_t ref_cross(uint32_t a, uint32_t b, int c, uint32_t buckets) {
    return (uint32_t)(ref_mix64(((uint64_t)a << 32 | b) ^ ((uint64_t)(c + 1) * 0x9E3779B97F4A7C15ull)) % buckets);
}
static void path_of(char *out, size_t cap, const char *name) { snprintf(out, cap, "%s/%s", GOLD, name); }

// ---- 1. hashing ------------------------------------------------------------------------
static const struct { const char *s; size_t n; } HS[] = {
    {"", 0},
    {"a", 1},
    {"1234567", 7},
    {"12345678", 8},
    {"123456789", 9},
    {"the quick brown fox jumps over", 30},
    {"68fd1e64", 8},                  // Criteo-like 8-hex-digit values
    {"05db9164", 8},
    {"\x80\xff\xfe\x81", 4},          // bytes >= 0x80 (signed char must not leak in)
    {"caf\xc3\xa9 \xe2\x82\xac 0123456789abcdef", 26},
    {"a\0b", 3},                      // an embedded NUL: the length counts, not strlen
};
#define NHS ((int)(sizeof HS / sizeof HS[0]))
static const int HSLOT[4] = {0, 1, 25, 127};
static const uint32_t HBK[5] = {1, 2, 1000, 1u << 20, 4294967295u};
// wd_hash_bytes(s, n, slot) for HSLOT
static const uint64_t HRAW[NHS][4] = {
    {0xaba43d341389c376ull, 0x4bf422151844f86cull, 0x2b0551031c0d2d68ull, 0x8abce0ece7ca4cbfull},
    {0x9290b481af1fb17dull, 0x948f9c88d16f796aull, 0x61e5aaace9651481ull, 0x2213a3ee64ee47adull},
    {0x5243a07cfc11f5b3ull, 0x9a10815cf7501c4dull, 0x551d5c4b372a3c4dull, 0x66fbdd3083d1a8c2ull},
    {0x056190e480e57048ull, 0x4fa09a99f7ce0d05ull, 0xcdc77b565b5bea62ull, 0x042468eed82bf142ull},
    {0x4ae6e1d1a600ed30ull, 0x9b154e680a5d0b74ull, 0x999ddda16a8901e8ull, 0x2d46f3ccfedb8dd6ull},
    {0xf8e402256ffbfbd8ull, 0x42e28b2c4b41ddfeull, 0xccb6c66e42105fa0ull, 0xbae86bda03c29961ull},
    {0x8a135fc221b65606ull, 0x6ce954bdd53f2eacull, 0x4d7567175e373d13ull, 0xd2ed2d2de4a49794ull},
    {0xb5c69f16c54ef556ull, 0x13b7088bb223030full, 0x0e37599580487749ull, 0x3c7c636f188a4d51ull},
    {0xbd43148f01064671ull, 0x5051b0787acd30a8ull, 0x89af2250123d4bb2ull, 0x61df2e296bac2cb5ull},
    {0x015cc6d08b4e855aull, 0xca39c053662824daull, 0x3ab39c30fccdb11dull, 0xa0026b7a497335b8ull},
    {0xf1a164fde90350bfull, 0xfaeab0a4e7182f61ull, 0x03a45e5952755a47ull, 0x167b456b1f85d972ull},
};
// wd_hash_bucket(s, n, slot, b) for HSLOT x HBK
static const uint32_t HBUCKET[NHS][4][5] = {
    {{0u, 0u, 942u, 639862u, 3207463082u}, {0u, 0u, 92u, 325740u, 1681463937u}, {0u, 0u, 912u, 863592u, 1192394347u}, {0u, 1u, 991u, 675007u, 1921461676u}},
    {{0u, 1u, 837u, 1028477u, 1102079487u}, {0u, 0u, 370u, 1014122u, 1711216115u}, {0u, 1u, 561u, 332929u, 1263189806u}, {0u, 1u, 741u, 935853u, 2265050011u}},
    {{0u, 1u, 11u, 128435u, 1314231856u}, {0u, 1u, 453u, 7245u, 2439028138u}, {0u, 1u, 5u, 670797u, 2353502360u}, {0u, 0u, 354u, 108738u, 3939337714u}},
    {{0u, 0u, 680u, 356424u, 2252800300u}, {0u, 1u, 797u, 920837u, 1198434207u}, {0u, 0u, 762u, 780898u, 690185657u}, {0u, 0u, 978u, 782658u, 3696253488u}},
    {{0u, 0u, 184u, 60720u, 4041723649u}, {0u, 0u, 108u, 854900u, 2775734748u}, {0u, 0u, 168u, 590312u, 69656458u}, {0u, 0u, 550u, 757206u, 740458915u}},
    {{0u, 0u, 184u, 785368u, 1759510014u}, {0u, 0u, 790u, 122366u, 2384750890u}, {0u, 0u, 856u, 24480u, 247932431u}, {0u, 1u, 745u, 170337u, 3198879035u}},
    {{0u, 0u, 478u, 415238u, 2882123208u}, {0u, 0u, 788u, 994988u, 1109951338u}, {0u, 1u, 979u, 474387u, 2880218154u}, {0u, 0u, 228u, 300948u, 3079783618u}},
    {{0u, 0u, 366u, 980310u, 2065011821u}, {0u, 1u, 175u, 197391u, 3319401370u}, {0u, 1u, 129u, 554825u, 2390741214u}, {0u, 1u, 129u, 675153u, 1426501824u}},
    {{0u, 1u, 169u, 411249u, 3192478464u}, {0u, 0u, 800u, 864424u, 3407798560u}, {0u, 0u, 58u, 871346u, 2615963138u}, {0u, 1u, 661u, 797877u, 3448462046u}},
    {{0u, 0u, 474u, 951642u, 2360036394u}, {0u, 0u, 930u, 533722u, 811722030u}, {0u, 1u, 629u, 897309u, 931220814u}, {0u, 0u, 376u, 210360u, 3916800306u}},
    {{0u, 1u, 287u, 217279u, 3668227517u}, {0u, 1u, 513u, 536417u, 3791839238u}, {0u, 1u, 215u, 350791u, 1444526240u}, {0u, 0u, 146u, 383346u, 906043101u}},
};

static void test_hash_bucket(void) {
    int pinned = 0;
    for (int i = 0; i < NHS; i++)
        for (int k = 0; k < 4; k++) {
            uint64_t raw = wd_hash_bytes(HS[i].s, HS[i].n, (uint64_t)HSLOT[k]);
            if (raw != HRAW[i][k]) { CHECK(raw == HRAW[i][k]); printf("  wd_hash_bytes(#%d, slot %d) = 0x%016" PRIx64 ", pinned 0x%016" PRIx64 "\n", i, HSLOT[k], raw, HRAW[i][k]); }
            for (int j = 0; j < 5; j++) {
                uint32_t got = wd_hash_bucket(HS[i].s, HS[i].n, HSLOT[k], HBK[j]);
                if (got != HBUCKET[i][k][j]) { CHECK(got == HBUCKET[i][k][j]); printf("  wd_hash_bucket(#%d, slot %d, %u) = %u, pinned %u\n", i, HSLOT[k], HBK[j], got, HBUCKET[i][k][j]); }
                // the categorical rule: id = wd_hash_bytes(s, len, slot) % buckets, on the pinned values
                CHECK(HBUCKET[i][k][j] == (uint32_t)(HRAW[i][k] % HBK[j]));
                pinned++;
            }
        }
    // the slot is part of the hash; only the first n bytes count
    CHECK(wd_hash_bucket("68fd1e64", 8, 0, 1u << 20) != wd_hash_bucket("68fd1e64", 8, 1, 1u << 20));
    CHECK(wd_hash_bucket("123456789", 8, 3, 4294967295u) == wd_hash_bucket("12345678", 8, 3, 4294967295u));
    CHECK(wd_hash_bucket("", 0, 5, 1000) == wd_hash_bucket("xyz", 0, 5, 1000));
    CHECK(wd_hash_bucket("a\0b", 3, 0, 4294967295u) != wd_hash_bucket("a", 1, 0, 4294967295u));
    printf("  %d bucket values and %d raw hashes pinned\n", pinned, NHS * 4);
}

static void test_hash_bytes_raw(void) {
    unsigned char buf[64];
    for (int i = 0; i < 64; i++) buf[i] = (unsigned char)(i * 37 + 11);
    struct { const void *p; size_t n; uint64_t seed; uint64_t want; } v[] = {
        {"", 0, 0, 0xaba43d341389c376ull},
        {"", 0, UINT64_MAX, 0x23b2c2f421618232ull},
        {"68fd1e64", 8, 0x123456789abcdef0ull, 0x8fa4d3d7d0cd92e7ull},
        {buf, 64, 0, 0x7a8dd7302ecf4955ull},
        {buf, 63, 0, 0xc1a167ed6e5f742aull},
        {buf, 64, UINT64_MAX, 0xc56237b4dbf2dc9eull},
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        uint64_t got = wd_hash_bytes(v[i].p, v[i].n, v[i].seed);
        if (got != v[i].want) { CHECK(got == v[i].want); printf("  wd_hash_bytes case %zu = 0x%016" PRIx64 ", pinned 0x%016" PRIx64 "\n", i, got, v[i].want); }
    }
    CHECK(wd_hash_bytes(buf, 64, 0) != wd_hash_bytes(buf, 64, 1));
}

// ---- 2. cross hash ---------------------------------------------------------------------
static const uint32_t XID[] = {0, 1, 7, 123456, 0x80000000u, 0xFFFFFFFEu, 0xFFFFFFFFu};
#define NXID ((int)(sizeof XID / sizeof XID[0]))
static const int XC[4] = {0, 1, 5, 31};
static const uint32_t XBK[4] = {1, 17, 1u << 20, 4294967295u};
// wd_cross_bucket(a, b, c, buckets): a curated list of (a, b, c), buckets XBK[1..3]
static const struct { uint32_t a, b; int c; uint32_t want[3]; } XPIN[] = {
    {0x0u, 0x0u, 0, {12u, 904623u, 1564374505u}},
    {0x0u, 0x1u, 0, {14u, 338976u, 4103576u}},
    {0x1u, 0x0u, 0, {12u, 372757u, 2372235602u}},
    {0x1u, 0x1u, 1, {5u, 800785u, 468124602u}},
    {0x7u, 0x1e240u, 5, {1u, 292723u, 88140377u}},
    {0x1e240u, 0x7u, 5, {3u, 142495u, 2977649436u}},
    {0x80000000u, 0x1u, 0, {3u, 237223u, 1483437564u}},
    {0xffffffffu, 0xffffffffu, 0, {11u, 24772u, 2598024977u}},
    {0xffffffffu, 0xffffffffu, 31, {10u, 21079u, 4205479934u}},
    {0xfffffffeu, 0x0u, 1, {8u, 116715u, 655406941u}},
    {0x0u, 0xffffffffu, 31, {7u, 111086u, 2134786091u}},
    {0x2au, 0x1092u, 2, {3u, 1006889u, 113939375u}},
};

static void test_cross_bucket(void) {
    int n = 0, bad = 0;
    // the documented formula, over every id pair, cross index and bucket count
    for (int i = 0; i < NXID; i++)
        for (int j = 0; j < NXID; j++)
            for (int c = 0; c < 4; c++)
                for (int k = 0; k < 4; k++) {
                    uint32_t got = wd_cross_bucket(XID[i], XID[j], XC[c], XBK[k]);
                    if (got != ref_cross(XID[i], XID[j], XC[c], XBK[k])) {
                        if (bad++ < 5) printf("  wd_cross_bucket(%u, %u, %d, %u) = %u, the documented formula gives %u\n", XID[i], XID[j], XC[c], XBK[k], got, ref_cross(XID[i], XID[j], XC[c], XBK[k]));
                    }
                    n++;
                }
    CHECK(bad == 0);
    // pinned values
    for (size_t p = 0; p < sizeof XPIN / sizeof XPIN[0]; p++)
        for (int k = 0; k < 3; k++) {
            uint32_t got = wd_cross_bucket(XPIN[p].a, XPIN[p].b, XPIN[p].c, XBK[k + 1]);
            if (got != XPIN[p].want[k]) { CHECK(got == XPIN[p].want[k]); printf("  wd_cross_bucket(%u, %u, %d, %u) = %u, pinned %u\n", XPIN[p].a, XPIN[p].b, XPIN[p].c, XBK[k + 1], got, XPIN[p].want[k]); }
        }
    // it depends on both ids, their order and the cross index (full 32-bit range: no chance collisions)
    int same = 0;
    for (int i = 0; i < NXID; i++)
        for (int j = 0; j < NXID; j++)
            for (int c = 0; c < 4; c++) {
                uint32_t h = wd_cross_bucket(XID[i], XID[j], XC[c], 4294967295u);
                for (int i2 = 0; i2 < NXID; i2++) same += i2 != i && wd_cross_bucket(XID[i2], XID[j], XC[c], 4294967295u) == h;
                for (int j2 = 0; j2 < NXID; j2++) same += j2 != j && wd_cross_bucket(XID[i], XID[j2], XC[c], 4294967295u) == h;
                for (int c2 = 0; c2 < 4; c2++) same += c2 != c && wd_cross_bucket(XID[i], XID[j], XC[c2], 4294967295u) == h;
                if (i != j) same += wd_cross_bucket(XID[j], XID[i], XC[c], 4294967295u) == h;
            }
    CHECK(same == 0);
    for (int i = 0; i < NXID; i++) CHECK(wd_cross_bucket(XID[i], XID[(i + 1) % NXID], 2, 1) == 0);
    printf("  %d values against the documented formula, %zu pinned\n", n, 3 * sizeof XPIN / sizeof XPIN[0]);
}

// ---- 3. count feature --------------------------------------------------------------------
static const struct { int64_t x; uint32_t bits; } CF[] = {
   {-20LL, 0xc042d975u}, {-19LL, 0xc03fba14u}, {-18LL, 0xc03c71b0u}, {-17LL, 0xc038fbdau},
   {-16LL, 0xc035535eu}, {-15LL, 0xc0317218u}, {-14LL, 0xc02d50b2u}, {-13LL, 0xc028e651u},
   {-12LL, 0xc0242821u}, {-11LL, 0xc01f08b6u}, {-10LL, 0xc019771eu}, {-9LL, 0xc0135d8eu},
   {-8LL, 0xc00c9f54u}, {-7LL, 0xc0051592u}, {-6LL, 0xbff91395u}, {-5LL, 0xbfe55860u},
   {-4LL, 0xbfce0210u}, {-3LL, 0xbfb17218u}, {-2LL, 0xbf8c9f54u}, {-1LL, 0xbf317218u},
   {0LL, 0x00000000u}, {1LL, 0x3f317218u}, {2LL, 0x3f8c9f54u}, {3LL, 0x3fb17218u},
   {4LL, 0x3fce0210u}, {5LL, 0x3fe55860u}, {6LL, 0x3ff91395u}, {7LL, 0x40051592u},
   {8LL, 0x400c9f54u}, {9LL, 0x40135d8eu}, {10LL, 0x4019771eu}, {11LL, 0x401f08b6u},
   {12LL, 0x40242821u}, {13LL, 0x4028e651u}, {14LL, 0x402d50b2u}, {15LL, 0x40317218u},
   {16LL, 0x4035535eu}, {17LL, 0x4038fbdau}, {18LL, 0x403c71b0u}, {19LL, 0x403fba14u},
   {20LL, 0x4042d975u}, {100LL, 0x4093af11u}, {1000LL, 0x40dd1485u}, {10000LL, 0x41135df7u},
   {100000LL, 0x413834fcu}, {1000000LL, 0x415d0c56u}, {10000000LL, 0x4180f1dcu}, {100000000LL, 0x41935d8eu},
   {1000000000LL, 0x41a5c940u}, {10000000000LL, 0x41b834f1u}, {100000000000LL, 0x41caa0a3u}, {1000000000000LL, 0x41dd0c55u},
   {10000000000000LL, 0x41ef7807u}, {100000000000000LL, 0x4200f1dcu}, {1000000000000000LL, 0x420a27b5u}, {10000000000000000LL, 0x42135d8eu},
   {100000000000000000LL, 0x421c9367u}, {1000000000000000000LL, 0x4225c940u}, {-100LL, 0xc093af11u}, {-1000LL, 0xc0dd1485u},
   {-10000LL, 0xc1135df7u}, {-100000LL, 0xc13834fcu}, {-1000000LL, 0xc15d0c56u}, {-10000000LL, 0xc180f1dcu},
   {-100000000LL, 0xc1935d8eu}, {-1000000000LL, 0xc1a5c940u}, {-10000000000LL, 0xc1b834f1u}, {-100000000000LL, 0xc1caa0a3u},
   {-1000000000000LL, 0xc1dd0c55u}, {-10000000000000LL, 0xc1ef7807u}, {-100000000000000LL, 0xc200f1dcu}, {-1000000000000000LL, 0xc20a27b5u},
   {-10000000000000000LL, 0xc2135d8eu}, {-100000000000000000LL, 0xc21c9367u}, {-1000000000000000000LL, 0xc225c940u}, {99LL, 0x40935d8eu},
   {999999LL, 0x415d0c55u}, {16777216LL, 0x41851592u}, {9007199254740993LL, 0x4212f27cu}, {INT64_MAX, 0x422eac50u},
   {INT64_MIN + 1, 0xc22eac50u}, {INT64_MIN, 0xc22eac50u},
};
#define NCF ((int)(sizeof CF / sizeof CF[0]))
static float ulp_of(float f) { f = fabsf(f); return nextafterf(f, INFINITY) - f; }

static void test_count_feature(void) {
    for (int i = 0; i < NCF; i++) {
        float got = wd_count_feature(CF[i].x);
        if (fbits(got) != CF[i].bits) { CHECK(fbits(got) == CF[i].bits); printf("  wd_count_feature(%" PRId64 ") = %a (0x%08x), pinned %a (0x%08x)\n", CF[i].x, (double)got, fbits(got), (double)bitsf(CF[i].bits), CF[i].bits); }
        // independently: log1p in long double, within one float ulp
        long double x = (long double)CF[i].x;
        float ref = (float)(x >= 0 ? log1pl(x) : -log1pl(-x));
        CHECK(isfinite(got) && fabsf(got - ref) <= ulp_of(ref));
        CHECK(isfinite(bitsf(CF[i].bits)));
    }
    // the rule's shape: f(0) = +0, odd, non-decreasing, never NaN or Inf
    CHECK(fbits(wd_count_feature(0)) == 0);
    for (int64_t x = -100000; x <= 100000; x += 7) CHECK(fbits(wd_count_feature(-x)) == fbits(-wd_count_feature(x)));
    for (int64_t x = -1000; x < 1000; x++) if (!(wd_count_feature(x) < wd_count_feature(x + 1))) { CHECK(wd_count_feature(x) < wd_count_feature(x + 1)); break; }
    CHECK(isfinite(wd_count_feature(INT64_MIN)) && isfinite(wd_count_feature(INT64_MAX)));
    // by hand: ln 2 and k ln 10 (f(10^k - 1) = k ln 10)
    CHECK(fabsf(wd_count_feature(1) - 0.693147180559945309417f) <= ulp_of(0.6931472f));
    long double ln10 = 2.302585092994045684017991454684364208L;
    int64_t p = 1;
    for (int k = 1; k <= 18; k++) {
        p *= 10;
        float want = (float)(k * ln10);
        CHECK(fabsf(wd_count_feature(p - 1) - want) <= ulp_of(want));
        CHECK(fabsf(wd_count_feature(1 - p) + want) <= ulp_of(want));
    }
    printf("  %d values pinned\n", NCF);
}

// ---- 4. the version-1 .wdr fixture -----------------------------------------------------------
#define GOLDEN_N 47
// Sample i of tests/golden/v1.wdr: the same definition as make_golden.c.
static void golden_sample(int i, float *label, float dense[3], uint32_t *c1, uint32_t *site, uint32_t tags[3], int *ntags) {
    static const int64_t counts[10] = {0, 1, -1, 2, -3, 10, 1000, -2, 123456789, 7};
    *label = i == 5 ? 0.25f : (float)(i % 3 == 0);
    dense[0] = wd_count_feature(counts[i % 10]);
    dense[1] = i == GOLDEN_N - 1 ? -0.0f : (float)(i - 23) * 0.125f;
    dense[2] = wd_count_feature((int64_t)i * i - 40);
    char s[32];
    if (i == 7) s[0] = 0;
    else snprintf(s, sizeof s, "%08x", (unsigned)((uint32_t)i * 2654435761u));
    *c1 = wd_hash_bucket(s, strlen(s), 0, 16);
    snprintf(s, sizeof s, "site-%d", i % 5);
    *site = wd_hash_bucket(s, strlen(s), 1, 9);
    *ntags = i % 4;
    for (int j = 0; j < *ntags; j++) tags[j] = (uint32_t)((i + 2 * j) % 6);
}
static void golden_schema(wd_schema *s) {
    memset(s, 0, sizeof *s);
    s->ndense = 3;
    s->nslots = 3;
    snprintf(s->slot[0].name, WD_NAME_MAX, "C1");
    s->slot[0].buckets = 16;
    snprintf(s->slot[1].name, WD_NAME_MAX, "site");
    s->slot[1].buckets = 9;
    snprintf(s->slot[2].name, WD_NAME_MAX, "tags");
    s->slot[2].buckets = 6;
    s->slot[2].kind = WD_MULTI_HOT;
}
// FNV-1a over every decoded array of samples [0, b->n) of a batch, in order:
// label, weight, dense, then per slot (offsets n+1 for multi-hot) ids.
static uint64_t batch_checksum(uint64_t h, const wd_batch *b) {
    size_t n = (size_t)b->n;
    h = fnv(h, b->label, 4 * n);
    h = fnv(h, b->weight, 4 * n);
    h = fnv(h, b->dense, 4 * n * (size_t)b->ndense);
    for (int k = 0; k < b->nslots; k++) {
        if (b->kind[k] == WD_MULTI_HOT) {
            h = fnv(h, b->offs[k], 4 * (n + 1));
            h = fnv(h, b->ids[k], 4 * (size_t)b->offs[k][n]);
        } else h = fnv(h, b->ids[k], 4 * n);
    }
    return h;
}

#define WDR_BYTES 1031
static const int WDR_BLOCK_N[3] = {20, 20, 7};
static const uint64_t WDR_BLOCK_SUM[3] = {0xf580e784ef30200cull, 0xfbb3c12b7d43f32cull, 0x05f579adc23ee5f8ull};
#define WDR_TOTAL_SUM 0x558c05829f0e5f98ull

// The byte layout of section 7, read without the library: header fields and
// CRC, the trailer and footer, each block header and its CRCs, and the raw
// payload (zstd, then un-shuffled columns) against the sample definition.
// want_bytes 0: any size (a file written now: zstd's output may change between zstd versions).
static void wdr_layout(const char *path, size_t want_bytes) {
    REQUIRE(ref_crc32c("123456789", 9) == 0xE3069283u);   // the CRC-32C check value
    size_t n = 0;
    unsigned char *f = slurp(path, &n);
    REQUIRE(f != NULL);
    CHECK(want_bytes == 0 || n == want_bytes);
    if (n < 300) { free(f); REQUIRE(n >= 300); }
    CHECK(memcmp(f, "\x89WDR\r\n\x1a\n", 8) == 0);
    uint32_t hb = le32(f + 12);
    CHECK(le32(f + 8) == 1);                        // version
    CHECK(hb == 96 + 48 * 3 + 4);                   // fixed part, 3 slots of 48 bytes, CRC
    CHECK(le32(f + 16) == 3 && le32(f + 20) == 3);  // ndense, nslots
    CHECK(le32(f + 24) == 0 && le32(f + 28) == 0);  // flags, reserved
    CHECK(strcmp((const char *)f + 32, "widedeep golden v1") == 0);
    const char *names[3] = {"C1", "site", "tags"};
    const uint32_t buckets[3] = {16, 9, 6}, kinds[3] = {0, 0, 1};
    for (int k = 0; k < 3 && hb <= n; k++) {
        const unsigned char *e = f + 96 + 48 * k;
        CHECK(strncmp((const char *)e, names[k], 32) == 0 && le32(e + 32) == buckets[k] && le32(e + 36) == kinds[k] && le64(e + 40) == 0);
    }
    CHECK(hb <= n && le32(f + hb - 4) == ref_crc32c(f, hb - 4));
    // trailer: footer offset, footer bytes, CRC of those 16 bytes, 'WDND'
    const unsigned char *t = f + n - 24;
    uint64_t fo = le64(t), fb = le64(t + 8);
    CHECK(le32(t + 16) == ref_crc32c(t, 16) && memcmp(t + 20, "WDND", 4) == 0);
    REQUIRE(fb == 24 + 16 * 3 + 8 && fo + fb + 24 == n);
    const unsigned char *ft = f + fo;
    CHECK(memcmp(ft, "WDFT", 4) == 0 && le32(ft + 4) == 0 && le64(ft + 8) == 3 && le64(ft + 16) == GOLDEN_N);
    CHECK(le32(ft + fb - 8) == ref_crc32c(ft, fb - 8) && le32(ft + fb - 4) == 0);
    uint64_t expect_off = hb;
    int sample = 0, mismatches = 0, broken = 0;
    for (int blk = 0; blk < 3 && !broken; blk++) {
        const unsigned char *ix = ft + 24 + 16 * blk;
        uint64_t off = le64(ix);
        uint32_t ns = le32(ix + 8), bb = le32(ix + 12);
        CHECK(off == expect_off && ns == (uint32_t)WDR_BLOCK_N[blk]);
        if (!(off + bb <= fo && bb > 32 && ns <= 20)) { CHECK(!"block inside the file, at most 20 samples"); break; }
        expect_off = off + bb;
        const unsigned char *h = f + off;
        uint32_t comp = le32(h + 8), raw = le32(h + 12), nnz = le32(h + 16);
        CHECK(memcmp(h, "WDBK", 4) == 0 && le32(h + 4) == ns && le32(h + 20) == 0);
        CHECK(comp + 32 == bb);
        CHECK(le32(h + 28) == ref_crc32c(h, 28));
        CHECK(le32(h + 24) == ref_crc32c(h + 32, comp));
        if (comp + 32 != bb || raw > 4096) { CHECK(!"sizes of a small block"); break; }
        unsigned char p[4096];
        size_t got = ZSTD_decompress(p, raw, h + 32, comp);
        if (ZSTD_isError(got) || got != raw) { CHECK(!"zstd frame decodes to raw_bytes"); break; }
        // columns: label[n], 3 dense columns, C1 id[n], site id[n], tags count[n] then ids;
        // each 4-byte column byte-shuffled (all byte 0s, then all byte 1s, ...)
        size_t at = 0;
        uint32_t col[64];
        #define UNSHUF(cnt) do { if ((cnt) > 64 || at + 4 * (size_t)(cnt) > raw) { broken = 1; break; } \
            for (size_t q = 0; q < (cnt); q++) col[q] = (uint32_t)p[at + q] | (uint32_t)p[at + (cnt) + q] << 8 | (uint32_t)p[at + 2 * (cnt) + q] << 16 | (uint32_t)p[at + 3 * (cnt) + q] << 24; \
            at += 4 * (size_t)(cnt); } while (0)
        uint32_t lab[20], den[3][20], c1[20], site[20], cnt[20], total = 0;
        do {
            UNSHUF(ns); memcpy(lab, col, 4 * ns);
            for (int d = 0; d < 3 && !broken; d++) { UNSHUF(ns); memcpy(den[d], col, 4 * ns); }
            if (broken) break;
            UNSHUF(ns); memcpy(c1, col, 4 * ns);
            UNSHUF(ns); memcpy(site, col, 4 * ns);
            UNSHUF(ns); memcpy(cnt, col, 4 * ns);
            for (uint32_t i = 0; i < ns; i++) total += cnt[i] <= 64 ? cnt[i] : 65;
            CHECK(nnz == total);
            UNSHUF(total);
        } while (0);
        #undef UNSHUF
        if (broken) { CHECK(!"raw payload holds the documented columns"); break; }
        CHECK(at == raw);
        uint32_t used = 0;
        for (uint32_t i = 0; i < ns; i++, sample++) {
            float y, dv[3];
            uint32_t ec1, esite, tags[3];
            int nt;
            golden_sample(sample, &y, dv, &ec1, &esite, tags, &nt);
            int ok = lab[i] == fbits(y) && c1[i] == ec1 && site[i] == esite && cnt[i] == (uint32_t)nt;
            for (int d = 0; d < 3; d++) ok &= den[d][i] == fbits(dv[d]);
            for (int j = 0; j < nt && ok; j++) ok &= col[used + (uint32_t)j] == tags[j];
            used += ok ? cnt[i] : 0;
            mismatches += !ok;
        }
    }
    CHECK(expect_off == fo && sample == GOLDEN_N);
    CHECK(mismatches == 0);
    free(f);
}
static void test_wdr_layout(void) {
    char path[600];
    path_of(path, sizeof path, "v1.wdr");
    wdr_layout(path, WDR_BYTES);
}

// The same samples written by this build's writer: the same layout (read
// without the library), so files written today are version-1 files.
static void test_wdr_writer_layout(void) {
    char path[600];
    snprintf(path, sizeof path, "%s/golden-rewrite.wdr", TMP);
    wd_schema s;
    golden_schema(&s);
    wd_batch b;
    REQUIRE_OK(wd_batch_init(&b, &s, GOLDEN_N, 3 * GOLDEN_N));
    for (int i = 0; i < GOLDEN_N; i++) {
        uint32_t tags[3];
        int nt;
        golden_sample(i, &b.label[i], b.dense + 3 * i, &b.ids[0][i], &b.ids[1][i], tags, &nt);
        b.weight[i] = 1.0f;
        uint32_t o = b.offs[2][i];
        for (int j = 0; j < nt; j++) b.ids[2][o + (uint32_t)j] = tags[j];
        b.offs[2][i + 1] = o + (uint32_t)nt;
    }
    b.n = GOLDEN_N;
    wd_writer_desc wdesc;
    memset(&wdesc, 0, sizeof wdesc);
    wdesc.block_samples = 20;
    wdesc.level = 19;
    wdesc.created = "widedeep golden v1";
    wd_writer *w = NULL;
    wd_status st = wd_writer_open(path, &s, &wdesc, &w);
    CHECK_OK(st);
    if (!st) {
        st = wd_writer_append(w, &b);
        CHECK_OK(st);
        if (st) wd_writer_abort(w);
        else CHECK_OK(st = wd_writer_close(w));
    }
    wd_batch_free(&b);
    REQUIRE(st == WD_OK);
    wdr_layout(path, 0);
    remove(path);
}

// Through the library: open, verify, schema, blocks, every decoded value and checksums.
static void test_wdr_decode(void) {
    char path[600];
    path_of(path, sizeof path, "v1.wdr");
    wd_reader *r = NULL;
    REQUIRE_OK(wd_reader_open(path, &r));
    int64_t bad = -2;
    CHECK_OK(wd_reader_verify(r, &bad));
    CHECK(bad == -1);
    wd_schema want;
    golden_schema(&want);
    const wd_schema *s = wd_reader_schema(r);
    CHECK(wd_schema_equal(s, &want));
    CHECK(s->ndense == 3 && s->nslots == 3);
    CHECK(strcmp(s->slot[0].name, "C1") == 0 && s->slot[0].buckets == 16 && s->slot[0].kind == WD_ONE_HOT);
    CHECK(strcmp(s->slot[1].name, "site") == 0 && s->slot[1].buckets == 9 && s->slot[1].kind == WD_ONE_HOT);
    CHECK(strcmp(s->slot[2].name, "tags") == 0 && s->slot[2].buckets == 6 && s->slot[2].kind == WD_MULTI_HOT);
    CHECK(strcmp(wd_reader_created(r), "widedeep golden v1") == 0);
    CHECK(wd_reader_file_bytes(r) == WDR_BYTES);
    CHECK(wd_reader_nsamples(r) == GOLDEN_N);
    REQUIRE(wd_reader_nblocks(r) == 3);
    wd_batch b, all;
    REQUIRE_OK(wd_batch_init(&b, s, 1, 0));
    if (wd_batch_init(&all, s, 1, 0) != WD_OK) { wd_batch_free(&b); wd_reader_close(r); REQUIRE(!"batch init"); }
    wd_decoder *dec = NULL;
    CHECK_OK(wd_decoder_create(&dec));
    uint64_t total = FNV0;
    int sample = 0, mismatches = 0;
    for (int blk = 0; blk < 3; blk++) {
        CHECK(wd_reader_block_samples(r, blk) == WDR_BLOCK_N[blk]);
        wd_status st = wd_reader_read_block(r, blk, &b);
        CHECK_OK(st);
        if (st) continue;
        CHECK(b.n == WDR_BLOCK_N[blk]);
        uint64_t h = batch_checksum(FNV0, &b);
        if (h != WDR_BLOCK_SUM[blk]) { CHECK(h == WDR_BLOCK_SUM[blk]); printf("  block %d checksum 0x%016" PRIx64 ", pinned 0x%016" PRIx64 "\n", blk, h, WDR_BLOCK_SUM[blk]); }
        total = batch_checksum(total, &b);
        for (int i = 0; i < b.n; i++, sample++) {
            float y, dv[3];
            uint32_t c1, site, tags[3];
            int nt, c;
            golden_sample(sample, &y, dv, &c1, &site, tags, &nt);
            const uint32_t *ids = wd_batch_sample_ids(&b, 2, i, &c);
            int ok = fbits(b.label[i]) == fbits(y) && b.weight[i] == 1.0f && b.ids[0][i] == c1 && b.ids[1][i] == site && c == nt;
            for (int d = 0; d < 3; d++) ok &= fbits(b.dense[3 * i + d]) == fbits(dv[d]);
            for (int j = 0; j < nt && ok; j++) ok &= ids[j] == tags[j];
            if (!ok && mismatches++ < 3) printf("  sample %d differs from its definition\n", sample);
        }
        // the loader's path: fetch the bytes, decode them appended to one batch
        if (dec) {
            size_t nb = wd_reader_block_bytes(r, blk);
            void *buf = malloc(nb);
            CHECK(buf && wd_reader_fetch(r, blk, buf, nb) == WD_OK && wd_decode_block(dec, r, blk, buf, nb, &all) == WD_OK);
            free(buf);
        }
        // pinned spot values, block by block
        if (blk == 0) {
            CHECK(fbits(b.label[0]) == 0x3f800000u && fbits(b.label[5]) == 0x3e800000u && b.label[1] == 0.0f);
            CHECK(fbits(b.dense[0]) == 0 && fbits(b.dense[3 * 1]) == 0x3f317218u && fbits(b.dense[3 * 2]) == 0xbf317218u);
            CHECK(fbits(b.dense[1]) == fbits(-2.875f) && fbits(b.dense[2]) == 0xc06dab2au);   // -(23/8), -log1p(40)
            CHECK(b.ids[0][7] == wd_hash_bucket("", 0, 0, 16));   // the missing C1 value
            CHECK(b.ids[0][0] == wd_hash_bucket("00000000", 8, 0, 16) && b.ids[0][1] == wd_hash_bucket("9e3779b1", 8, 0, 16));
            CHECK(b.ids[1][0] == wd_hash_bucket("site-0", 6, 1, 9));
            int c;
            wd_batch_sample_ids(&b, 2, 0, &c);
            CHECK(c == 0);                                        // an empty multi-hot sample
            const uint32_t *ids = wd_batch_sample_ids(&b, 2, 3, &c);
            CHECK(c == 3 && ids[0] == 3 && ids[1] == 5 && ids[2] == 1);
        } else if (blk == 1) {
            CHECK(fbits(b.dense[3 * 3 + 1]) == 0 && b.label[3] == 0.0f);   // sample 23: dense[1] = +0
            CHECK(fbits(b.dense[3 * 8]) == 0x41950d1cu);                   // sample 28: log1p(123456789)
        } else {
            CHECK(fbits(b.dense[3 * 6 + 1]) == 0x80000000u);               // sample 46: -0 survives
            CHECK(b.label[6] == 0.0f && b.label[5] == 1.0f);                // samples 46, 45
        }
    }
    CHECK(sample == GOLDEN_N && mismatches == 0);
    if (total != WDR_TOTAL_SUM) { CHECK(total == WDR_TOTAL_SUM); printf("  total checksum 0x%016" PRIx64 ", pinned 0x%016llx\n", total, WDR_TOTAL_SUM); }
    CHECK(all.n == GOLDEN_N && batch_checksum(FNV0, &all) != 0);
    // the appended batch holds the same values as the blocks one by one
    if (all.n == GOLDEN_N) {
        wd_batch one;
        if (wd_batch_init(&one, s, GOLDEN_N, 0) == WD_OK) {
            for (int blk = 0; blk < 3; blk++) if (wd_reader_read_block(r, blk, &b) == WD_OK) CHECK_OK(wd_batch_append(&one, &b, 0, b.n));
            CHECK(one.n == GOLDEN_N && batch_checksum(FNV0, &one) == batch_checksum(FNV0, &all));
            wd_batch_free(&one);
        }
    }
    wd_decoder_destroy(dec);
    wd_batch_free(&b);
    wd_batch_free(&all);
    wd_reader_close(r);
}

// ---- 5. the version-1 .wdm fixtures ------------------------------------------------------------
typedef struct golden_model {
    const char *file;
    int embed_dim, hidden[WD_MAX_LAYERS], optimizer, pooling, ncross, cross[2][2], no_wide, no_deep;
    uint32_t lr_deep, lr_wide, ftrl_beta, ftrl_l1, ftrl_l2, adagrad_init, adam_beta1, adam_beta2, adam_eps, emb_init;   // float bits
    uint32_t cross_buckets;
    uint64_t seed;
    int64_t epoch, batch, step, batch_size, model_bytes;
    int E, D, S, IN, R, nlayers, ntables;
    int layer_in[WD_MAX_LAYERS + 1], layer_out[WD_MAX_LAYERS + 1];
    int64_t P_mlp, P, wide_rows, emb_rows, table_off[8];
    uint64_t sum[9];            // dense, dense_s1, dense_s2, wide, wide_z, wide_n, emb, emb_s1, emb_s2
    uint32_t pred[5];           // the hand-built batch
    uint64_t pred_file_sum;     // FNV of the probabilities of every v1.wdr sample, in file order
} golden_model;

static const golden_model GM[2] = {
    {.file = "v1_adam.wdm",
     .embed_dim = 3, .hidden = {4, 3, 0, 0, 0, 0, 0, 0}, .optimizer = WD_ADAM, .pooling = WD_POOL_SUM, .ncross = 1, .cross = {{0, 1}}, .no_wide = 0, .no_deep = 0,
     .lr_deep = 0x3c23d70au, .lr_wide = 0x3dcccccdu, .ftrl_beta = 0x3f800000u, .ftrl_l1 = 0x3a83126fu, .ftrl_l2 = 0x3c23d70au,
     .adagrad_init = 0x00000000u, .adam_beta1 = 0x3f666666u, .adam_beta2 = 0x3f7fbe77u, .adam_eps = 0x322bcc77u, .emb_init = 0x3dcccccdu,
     .cross_buckets = 17, .seed = 20260101,
     .epoch = 1, .batch = 3, .step = 9, .batch_size = 8, .model_bytes = 2592,
     .E = 3, .D = 3, .S = 3, .IN = 12, .R = 4, .nlayers = 3, .ntables = 4,
     .layer_in = {12, 4, 3}, .layer_out = {4, 3, 1},
     .P_mlp = 71, .P = 75, .wide_rows = 48, .emb_rows = 31, .table_off = {0, 16, 25, 31, 48},
     .sum = {0x53451bfb5046a429ull, 0xf26b4a8ab6af153full, 0xc8a608eb931c7328ull,
             0x2f90347e7ef6c690ull, 0xbb3887e1a246c5b2ull, 0x6a17921427b8cd45ull,
             0x3211954ea6172d01ull, 0xe2f0d0ecd2471e6dull, 0x8b6c65baf492d39cull},
     .pred = {0x3eeee727u, 0x3eb4a421u, 0x3f10e515u, 0x3ea22b87u, 0x3ec8e4b4u},  // 0.4666073 0.3528147 0.5659955 0.3167383 0.3923699
     .pred_file_sum = 0x65e6982a758d9fa4ull},
    {.file = "v1_adagrad.wdm",
     .embed_dim = 2, .hidden = {5, 0, 0, 0, 0, 0, 0, 0}, .optimizer = WD_ADAGRAD, .pooling = WD_POOL_MEAN, .ncross = 0, .cross = {{0, 0}}, .no_wide = 1, .no_deep = 0,
     .lr_deep = 0x3d4ccccdu, .lr_wide = 0x3d4ccccdu, .ftrl_beta = 0x00000000u, .ftrl_l1 = 0x00000000u, .ftrl_l2 = 0x00000000u,
     .adagrad_init = 0x3dcccccdu, .adam_beta1 = 0x3f666666u, .adam_beta2 = 0x3f7fbe77u, .adam_eps = 0x322bcc77u, .emb_init = 0x3d4ccccdu,
     .cross_buckets = 1048576, .seed = 5,
     .epoch = 1, .batch = 0, .step = 3, .batch_size = 16, .model_bytes = 1588,
     .E = 2, .D = 3, .S = 3, .IN = 9, .R = 3, .nlayers = 2, .ntables = 3,
     .layer_in = {9, 5}, .layer_out = {5, 1},
     .P_mlp = 56, .P = 60, .wide_rows = 31, .emb_rows = 31, .table_off = {0, 16, 25, 31},
     .sum = {0x3efc34bde0c993fdull, 0xb5c25c463577fee6ull, 0xe7f6c4b09523c5e5ull,
             0x14d3936f5fbcc155ull, 0x14d3936f5fbcc155ull, 0x14d3936f5fbcc155ull,
             0x979f7ed0c80de453ull, 0xfd915038fba0d2ceull, 0x0000000000000000ull},
     .pred = {0x3ef1362eu, 0x3ee2f328u, 0x3d810b7bu, 0x3de2a6c0u, 0x3f36d42du},  // 0.4711165 0.4432614 0.06301018 0.1106696 0.714175
     .pred_file_sum = 0xb7919f78ec0b5c91ull},
};

// Five samples on the golden schema, built by hand.
static int hand_batch(wd_batch *b) {
    wd_schema s;
    golden_schema(&s);
    if (wd_batch_init(b, &s, 5, 16)) return -1;
    static const float dense[5][3] = {{0, 0, 0}, {1.79175949f, -1.5f, 2.0f}, {-0.5f, 0.25f, -3.0f}, {10.0f, -10.0f, 0.001f}, {-0.0f, 1e-3f, 5.0f}};
    static const uint32_t site[5] = {0, 8, 3, 4, 1};
    static const int nt[5] = {0, 3, 1, 4, 1};
    static const uint32_t tags[5][4] = {{0}, {1, 1, 5}, {0}, {2, 3, 4, 5}, {3}};
    uint32_t c1[5] = {0, 15, wd_hash_bucket("68fd1e64", 8, 0, 16), 7, 12};
    for (int i = 0; i < 5; i++) {
        b->label[i] = (float)(i % 2);
        b->weight[i] = 1.0f;
        memcpy(b->dense + 3 * i, dense[i], sizeof dense[i]);
        b->ids[0][i] = c1[i];
        b->ids[1][i] = site[i];
        uint32_t o = b->offs[2][i];
        for (int j = 0; j < nt[i]; j++) b->ids[2][o + (uint32_t)j] = tags[i][j];
        b->offs[2][i + 1] = o + (uint32_t)nt[i];
    }
    b->n = 5;
    return 0;
}

static uint64_t floats_sum(const float *p, int64_t n) { return p ? fnv(FNV0, p, 4 * (size_t)n) : 0; }
static int any_nonzero(const float *p, int64_t n) { for (int64_t i = 0; p && i < n; i++) if (p[i] != 0.0f) return 1; return 0; }

static void check_model(const golden_model *g) {
    char path[600];
    path_of(path, sizeof path, g->file);
    wd_model *m = NULL;
    REQUIRE_OK(wd_model_load(path, &m));
    const wd_model_desc *d = wd_model_description(m);
    wd_schema want;
    golden_schema(&want);
    CHECK(d->schema && wd_schema_equal(d->schema, &want) && wd_schema_equal(wd_model_schema(m), &want));
    CHECK(d->embed_dim == g->embed_dim);
    for (int l = 0; l < WD_MAX_LAYERS; l++) CHECK(d->hidden[l] == g->hidden[l]);
    CHECK(d->optimizer == g->optimizer);
    CHECK(fbits(d->lr_deep) == g->lr_deep && fbits(d->lr_wide) == g->lr_wide);
    CHECK(fbits(d->ftrl_beta) == g->ftrl_beta && fbits(d->ftrl_l1) == g->ftrl_l1 && fbits(d->ftrl_l2) == g->ftrl_l2);
    CHECK(fbits(d->adagrad_init) == g->adagrad_init);
    CHECK(fbits(d->adam_beta1) == g->adam_beta1 && fbits(d->adam_beta2) == g->adam_beta2 && fbits(d->adam_eps) == g->adam_eps);
    CHECK(fbits(d->emb_init) == g->emb_init);
    CHECK(d->pooling == g->pooling);
    CHECK(d->ncross == g->ncross);
    for (int c = 0; c < WD_MAX_CROSSES; c++) {
        int a = c < 2 ? g->cross[c][0] : 0, b = c < 2 ? g->cross[c][1] : 0;
        CHECK(d->cross[c][0] == a && d->cross[c][1] == b);
    }
    CHECK(d->cross_buckets == g->cross_buckets);
    CHECK(d->no_wide == g->no_wide && d->no_deep == g->no_deep);
    CHECK(d->seed == g->seed);
    int64_t epoch = -1, batch = -1, step = -1;
    wd_model_position(m, &epoch, &batch, &step);
    CHECK(epoch == g->epoch && batch == g->batch && step == g->step);
    CHECK(wd_model_bytes(m) == g->model_bytes);
    wd_model_view v;
    wd_model_view_get(m, &v);
    CHECK(*v.epoch == g->epoch && *v.batch == g->batch && *v.step == g->step && *v.batch_size == g->batch_size);
    CHECK(v.E == g->E && v.D == g->D && v.S == g->S && v.IN == g->IN && v.R == g->R && v.nlayers == g->nlayers && v.ntables == g->ntables);
    CHECK(v.IN == v.D + v.S * v.E && v.R == 1 + (d->no_deep ? 0 : v.E));   // as section 17 documents
    for (int l = 0; l < v.nlayers && l <= WD_MAX_LAYERS; l++) CHECK(v.layer_in[l] == g->layer_in[l] && v.layer_out[l] == g->layer_out[l]);
    CHECK(v.P_mlp == g->P_mlp && v.P == g->P && v.P == v.P_mlp + v.D + 1);
    CHECK(v.wide_rows == g->wide_rows && v.emb_rows == g->emb_rows);
    for (int t = 0; t <= v.ntables && t < 8; t++) CHECK(v.table_off[t] == g->table_off[t]);
    int64_t ne = v.emb ? v.emb_rows * v.E : 0;
    const float *arr[9] = {v.dense, v.dense_s1, v.dense_s2, v.wide, v.wide_z, v.wide_n, v.emb, v.emb_s1, v.emb_s2};
    const int64_t len[9] = {v.P, v.P, v.P, v.wide_rows, v.wide_rows, v.wide_rows, ne, ne, ne};
    static const char *an[9] = {"dense", "dense_s1", "dense_s2", "wide", "wide_z", "wide_n", "emb", "emb_s1", "emb_s2"};
    for (int a = 0; a < 9; a++) {
        uint64_t h = floats_sum(arr[a], len[a]);
        if (h != g->sum[a]) { CHECK(h == g->sum[a]); printf("  %s: %s checksum 0x%016" PRIx64 ", pinned 0x%016" PRIx64 "\n", g->file, an[a], h, g->sum[a]); }
    }
    // trained: the optimizer state moved everywhere it exists
    CHECK(any_nonzero(v.dense_s1, v.P_mlp));
    if (d->optimizer == WD_ADAM) CHECK(v.emb_s2 && any_nonzero(v.dense_s2, v.P_mlp) && any_nonzero(v.emb_s2, ne));
    else CHECK(v.emb_s2 == NULL);
    CHECK(any_nonzero(v.emb_s1, ne));
    if (!d->no_wide) CHECK(any_nonzero(v.wide, v.wide_rows) && any_nonzero(v.wide_z, v.wide_rows) && any_nonzero(v.wide_n, v.wide_rows) && any_nonzero(v.dense + v.P_mlp, v.D + 1));
    else CHECK(!any_nonzero(v.wide, v.wide_rows) && !any_nonzero(v.wide_z, v.wide_rows) && !any_nonzero(v.wide_n, v.wide_rows) && !any_nonzero(v.dense + v.P_mlp, v.D + 1));   // untouched
    CHECK(wd_model_bytes(m) == 4 * (3 * v.P + 3 * v.wide_rows + (d->optimizer == WD_ADAM ? 3 : 2) * ne));
    // predictions: the hand-built batch, then every sample of v1.wdr
    wd_batch hb;
    if (hand_batch(&hb) == 0) {
        float p[5] = {0};
        CHECK_OK(wd_predict(m, &hb, p));
        for (int i = 0; i < 5; i++) {
#if defined(WD_USE_CBLAS) || defined(WD_USE_ONEDNN)   // a BLAS or oneDNN build sums the GEMMs in another order: last-bit differences only
            CHECK(fabsf(p[i] - bitsf(g->pred[i])) <= 1e-6f);
#else
            if (fbits(p[i]) != g->pred[i]) { CHECK(fbits(p[i]) == g->pred[i]); printf("  %s: p[%d] = %a (0x%08x), pinned %a (0x%08x)\n", g->file, i, (double)p[i], fbits(p[i]), (double)bitsf(g->pred[i]), g->pred[i]); }
#endif
            CHECK(p[i] > 0.0f && p[i] < 1.0f);
        }
        // one sample at a time gives the same bits (no batch-size dependence)
        wd_batch one;
        if (wd_batch_init(&one, &want, 1, 8) == WD_OK) {
            for (int i = 0; i < 5; i++) {
                one.n = 0;
                float q = -1;
                CHECK_OK(wd_batch_append(&one, &hb, i, 1));
                CHECK_OK(wd_predict(m, &one, &q));
                CHECK(fbits(q) == fbits(p[i]));
            }
            wd_batch_free(&one);
        }
        wd_batch_free(&hb);
    } else CHECK(!"hand batch");
    char wdr[600];
    path_of(wdr, sizeof wdr, "v1.wdr");
    wd_reader *r = NULL;
    if (wd_reader_open(wdr, &r) == WD_OK) {
        uint64_t h = FNV0;
        for (int blk = 0; blk < 3; blk++) {
            const wd_batch *b = NULL;
            float p[20];
            if (wd_reader_block(r, blk, &b) != WD_OK || b->n > 20) { CHECK(!"read block"); break; }
            CHECK_OK(wd_predict(m, b, p));
            h = fnv(h, p, 4 * (size_t)b->n);
        }
#if !defined(WD_USE_CBLAS) && !defined(WD_USE_ONEDNN)   // bit-exact for the portable loop nest only (see the top)
        if (h != g->pred_file_sum) { CHECK(h == g->pred_file_sum); printf("  %s: v1.wdr predictions checksum 0x%016" PRIx64 ", pinned 0x%016" PRIx64 "\n", g->file, h, g->pred_file_sum); }
#endif
        wd_reader_close(r);
    } else CHECK(!"open v1.wdr");
    // saving what was loaded writes version 3 with the same sections, byte for
    // byte, except POS: version 2 appends the training files' fingerprint
    // (0 for a model from a version-1 file) and a reserved word; and version 3
    // adds INPT after POS: the input contract, not recorded (flags 0, every
    // slot without a vocabulary: 8 + 8 S bytes)
    char out[600];
    snprintf(out, sizeof out, "%s/golden-resave-%s", TMP, g->file);
    CHECK_OK(wd_model_save(m, out));
    size_t n1 = 0, n2 = 0;
    unsigned char *a = slurp(path, &n1), *b = slurp(out, &n2);
    CHECK(a && b && n2 == n1 + 16 + 24 + 8 + 8 * 3 && memcmp(a, b, 8) == 0 && le32(a + 8) == 1 && le32(b + 8) == 3);
    size_t oa = 12, ob = 12;
    int sections = 0;
    while (a && b && oa + 16 <= n1 && ob + 16 <= n2) {
        uint32_t tag = le32(a + oa);
        uint64_t la = le64(a + oa + 8), lb = le64(b + ob + 8);
        if (le32(b + ob) == 0x54504e49u && ob + 16 + 32 + 8 <= n2) {   // 'INPT'
            const unsigned char *q = b + ob + 16;
            CHECK(lb == 32 && le32(q) == 0 && le32(q + 4) == 3);
            for (int k = 0; k < 3; k++) CHECK(le64(q + 8 + 8 * (size_t)k) == UINT64_MAX);
            CHECK(le32(q + lb) == ref_crc32c(q, lb) && le32(q + lb + 4) == 0);
            ob += 16 + (size_t)lb + 8;
            continue;
        }
        CHECK(le32(b + ob) == tag);
        if (tag == 0x20534f50u) {   // 'POS '
            CHECK(la == 32 && lb == 48 && memcmp(a + oa + 16, b + ob + 16, 32) == 0);
            for (int q = 0; q < 16; q++) CHECK(b[ob + 16 + 32 + (size_t)q] == 0);
        } else CHECK(la == lb && memcmp(a + oa, b + ob, 16 + (size_t)la + 8) == 0);
        oa += 16 + (size_t)la + 8; ob += 16 + (size_t)lb + 8;
        sections++;
    }
    CHECK(sections == 6 && oa == n1 && ob == n2);
    free(a); free(b);
    remove(out);
    wd_model_destroy(m);
}

// A fresh model from the same description: initialisation is a function of
// the seed (section 13), pinned, and inside the documented ranges.
static void desc_of(const golden_model *g, const wd_schema *s, wd_model_desc *md) {
    memset(md, 0, sizeof *md);
    md->schema = s;
    md->embed_dim = g->embed_dim;
    memcpy(md->hidden, g->hidden, sizeof md->hidden);
    md->optimizer = g->optimizer;
    md->lr_deep = bitsf(g->lr_deep); md->lr_wide = bitsf(g->lr_wide);
    md->ftrl_beta = bitsf(g->ftrl_beta); md->ftrl_l1 = bitsf(g->ftrl_l1); md->ftrl_l2 = bitsf(g->ftrl_l2);
    md->adagrad_init = bitsf(g->adagrad_init);
    md->adam_beta1 = bitsf(g->adam_beta1); md->adam_beta2 = bitsf(g->adam_beta2); md->adam_eps = bitsf(g->adam_eps);
    md->emb_init = bitsf(g->emb_init);
    md->pooling = g->pooling;
    md->ncross = g->ncross;
    memcpy(md->cross, g->cross, sizeof g->cross);
    md->cross_buckets = g->cross_buckets;
    md->no_wide = g->no_wide; md->no_deep = g->no_deep;
    md->seed = g->seed;
}
static const uint64_t INIT_SUM[2][2] = {   // dense, emb of a fresh model
    {0xfd659da3e301d1bdull, 0x310d5d967d8bfc60ull},
    {0x0b55bd7441973b9dull, 0x882f2b17816b287bull},
};
static void test_model_init(void) {
    wd_schema s;
    golden_schema(&s);
    for (int gi = 0; gi < 2; gi++) {
        const golden_model *g = &GM[gi];
        wd_model_desc md;
        desc_of(g, &s, &md);
        wd_model *m = NULL;
        REQUIRE_OK(wd_model_create(&md, &m));
        wd_model_view v;
        wd_model_view_get(m, &v);
        int64_t ne = v.emb_rows * v.E, e = -1, b = -1, st = -1;
        uint64_t hd = floats_sum(v.dense, v.P), he = floats_sum(v.emb, ne);
        if (hd != INIT_SUM[gi][0] || he != INIT_SUM[gi][1]) {
            CHECK(hd == INIT_SUM[gi][0] && he == INIT_SUM[gi][1]);
            printf("  %s: fresh dense 0x%016" PRIx64 " emb 0x%016" PRIx64 ", pinned 0x%016" PRIx64 " 0x%016" PRIx64 "\n", g->file, hd, he, INIT_SUM[gi][0], INIT_SUM[gi][1]);
        }
        // the loaded checkpoint's description creates the same geometry
        CHECK(v.P == g->P && v.wide_rows == g->wide_rows && v.emb_rows == g->emb_rows && wd_model_bytes(m) == g->model_bytes);
        wd_model_position(m, &e, &b, &st);
        CHECK(e == 0 && b == 0 && st == 0 && *v.batch_size == 0);
        // documented ranges: embeddings in [-emb_init, emb_init]; He-uniform ReLU layers, +-sqrt(6/(fan_in+1)) output
        int bad = 0;
        for (int64_t i = 0; i < ne; i++) bad += !(fabsf(v.emb[i]) <= md.emb_init) || v.emb_s1[i] != md.adagrad_init || (v.emb_s2 && v.emb_s2[i] != 0.0f);
        for (int l = 0; l < v.nlayers; l++) {
            double a = l + 1 < v.nlayers ? sqrt(6.0 / v.layer_in[l]) : sqrt(6.0 / (v.layer_in[l] + 1));
            for (int64_t i = 0; i < (int64_t)v.layer_in[l] * v.layer_out[l]; i++) bad += !(fabs(v.dense[v.layer_w[l] + i]) <= a);
            for (int i = 0; i < v.layer_out[l]; i++) bad += v.dense[v.layer_b[l] + i] != 0.0f;
        }
        for (int64_t i = v.P_mlp; i < v.P; i++) bad += v.dense[i] != 0.0f;
        for (int64_t i = 0; i < v.P; i++) bad += v.dense_s1[i] != (i < v.P_mlp ? md.adagrad_init : 0.0f) || v.dense_s2[i] != 0.0f;
        for (int64_t i = 0; i < v.wide_rows; i++) bad += v.wide[i] != 0.0f || v.wide_z[i] != 0.0f || v.wide_n[i] != 0.0f;
        CHECK(bad == 0);
        wd_model_destroy(m);
    }
}

static void test_wdm_adam(void) { check_model(&GM[0]); }
static void test_wdm_adagrad(void) { check_model(&GM[1]); }

// The .wdm header and section sequence of section 16, read without the library.
static void test_wdm_layout(void) {
    for (int gi = 0; gi < 2; gi++) {
        char path[600];
        path_of(path, sizeof path, GM[gi].file);
        size_t n = 0;
        unsigned char *f = slurp(path, &n);
        REQUIRE(f != NULL);
        CHECK(n > 12 && memcmp(f, "\x89WDM\r\n\x1a\n", 8) == 0 && le32(f + 8) == 1);
        static const char *tags[6] = {"DESC", "POS ", "DENS", "WIDE", "EMBD", "END "};
        size_t off = 12;
        for (int s = 0; s < 6; s++) {
            if (off + 16 > n) { CHECK(off + 16 <= n); break; }
            uint64_t bytes = le64(f + off + 8);
            CHECK(memcmp(f + off, tags[s], 4) == 0 && le32(f + off + 4) == 0);
            if (off + 16 + bytes + 8 > n) { CHECK(!"section inside the file"); break; }
            CHECK(le32(f + off + 16 + bytes) == ref_crc32c(f + off + 16, bytes) && le32(f + off + 20 + bytes) == 0);
            if (s == 1) {   // POS: epoch, batch in epoch, global step, batch size (u64 each)
                const unsigned char *p = f + off + 16;
                CHECK(bytes == 32 && (int64_t)le64(p) == GM[gi].epoch && (int64_t)le64(p + 8) == GM[gi].batch &&
                      (int64_t)le64(p + 16) == GM[gi].step && (int64_t)le64(p + 24) == GM[gi].batch_size);
            }
            if (s == 5) CHECK(bytes == 0);
            off += 16 + bytes + 8;
        }
        CHECK(off == n);
        free(f);
    }
}

// A file of a version this build does not know is refused as a format error.
static void test_version_refused(void) {
    const char *names[2] = {"v1.wdr", "v1_adam.wdm"};
    for (int i = 0; i < 2; i++) {
        char path[600], out[600];
        path_of(path, sizeof path, names[i]);
        snprintf(out, sizeof out, "%s/golden-v99-%s", TMP, names[i]);
        size_t n = 0;
        unsigned char *f = slurp(path, &n);
        REQUIRE(f != NULL && n > 16);
        f[8] = 99;   // a version from the future
        FILE *o = fopen(out, "wb");
        if (!o) { free(f); REQUIRE(o != NULL); }
        CHECK(fwrite(f, 1, n, o) == n);
        fclose(o);
        free(f);
        if (i == 0) {
            wd_reader *r = NULL;
            wd_status st = wd_reader_open(out, &r);
            CHECK(st == WD_ERR_FORMAT || st == WD_ERR_CORRUPT);
            if (st == WD_OK) wd_reader_close(r);
        } else {
            wd_model *m = NULL;
            CHECK(wd_model_load(out, &m) == WD_ERR_FORMAT);
            wd_model_destroy(m);
        }
        remove(out);
    }
}

static void find_golden(const char *argv0) {
    if (GOLD[0]) return;
    const char *cands[2] = {"tests/golden", "../tests/golden"};
    for (int i = 0; i < 2; i++) {
        char p[600];
        snprintf(p, sizeof p, "%s/v1.wdr", cands[i]);
        if (file_exists(p)) { snprintf(GOLD, sizeof GOLD, "%s", cands[i]); return; }
    }
    const char *slash = strrchr(argv0, '/');   // build/test_golden -> build/../tests/golden
    if (slash) snprintf(GOLD, sizeof GOLD, "%.*s/../tests/golden", (int)(slash - argv0), argv0);
    else snprintf(GOLD, sizeof GOLD, "tests/golden");
}

static void test_fixtures_present(void) {
    const char *names[3] = {"v1.wdr", "v1_adam.wdm", "v1_adagrad.wdm"};
    for (int i = 0; i < 3; i++) {
        char p[600];
        path_of(p, sizeof p, names[i]);
        if (!file_exists(p)) { printf("  missing fixture %s\n", p); CHECK(file_exists(p)); }
    }
}

int main(int argc, char **argv) {
    if (argc > 1) snprintf(TMP, sizeof TMP, "%s", argv[1]);
    if (argc > 2) snprintf(GOLD, sizeof GOLD, "%s", argv[2]);
    find_golden(argv[0]);
    RUN(test_fixtures_present);
    RUN(test_hash_bucket);
    RUN(test_hash_bytes_raw);
    RUN(test_cross_bucket);
    RUN(test_count_feature);
    RUN(test_wdr_layout);
    RUN(test_wdr_writer_layout);
    RUN(test_wdr_decode);
    RUN(test_wdm_layout);
    RUN(test_wdm_adam);
    RUN(test_wdm_adagrad);
    RUN(test_model_init);
    RUN(test_version_refused);
    return test_summary("test_golden");
}
