/*
 * sha256.c — SHA-256 (FIPS 180-4) and HMAC-SHA256 (RFC 2104), for the
 * ledger's argument digests, approval bindings, description pins, and the
 * MACs under the machine key that give the ledger's rows their authority
 * and redaction its masks (src/store/mac.c).
 *
 * Small and self-contained: the gate hashes a few short texts per call,
 * and a general crypto library would cost more to load and to initialise
 * than all of those hashes together.  Checked against the FIPS 180-4
 * examples and sha256sum, HMAC against RFC 4231's test cases
 * (tests/unit/test_sha256.c).
 *
 * Owns: nothing but the context it is given.  Must not: branch on or
 * index memory by the bytes it hashes (it hashes secrets: the rounds are
 * fixed arithmetic, so its time depends on the length alone).
 */
#include <string.h>

#include "util/util.h"

static const uint32_t K[64] = {
	0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
	0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
	0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
	0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
	0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
	0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
	0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
	0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
	0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
	0xc67178f2,
};

#define ROR(x, n) (((x) >> (n)) | ((x) << (32 - (n))))

static void block(uint32_t h[8], const unsigned char *p)
{
	uint32_t w[64];
	for (int i = 0; i < 16; i++)
		w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
		       (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
	for (int i = 16; i < 64; i++) {
		uint32_t s0 = ROR(w[i - 15], 7) ^ ROR(w[i - 15], 18) ^ (w[i - 15] >> 3);
		uint32_t s1 = ROR(w[i - 2], 17) ^ ROR(w[i - 2], 19) ^ (w[i - 2] >> 10);
		w[i] = w[i - 16] + s0 + w[i - 7] + s1;
	}
	uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], k = h[7];
	for (int i = 0; i < 64; i++) {
		uint32_t t1 = k + (ROR(e, 6) ^ ROR(e, 11) ^ ROR(e, 25)) + ((e & f) ^ (~e & g)) + K[i] + w[i];
		uint32_t t2 = (ROR(a, 2) ^ ROR(a, 13) ^ ROR(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
		k = g;
		g = f;
		f = e;
		e = d + t1;
		d = c;
		c = b;
		b = a;
		a = t1 + t2;
	}
	h[0] += a;
	h[1] += b;
	h[2] += c;
	h[3] += d;
	h[4] += e;
	h[5] += f;
	h[6] += g;
	h[7] += k;
}

void tgi_sha256_init(tgi_sha256 *s)
{
	static const uint32_t iv[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
	                               0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
	memcpy(s->h, iv, sizeof iv);
	s->len = 0;
	s->fill = 0;
}

void tgi_sha256_update(tgi_sha256 *s, const void *data, size_t n)
{
	const unsigned char *p = data;
	s->len += n;
	if (s->fill) {
		size_t take = 64 - s->fill < n ? 64 - s->fill : n;
		memcpy(s->buf + s->fill, p, take);
		s->fill += take;
		p += take;
		n -= take;
		if (s->fill < 64)
			return;
		block(s->h, s->buf);
		s->fill = 0;
	}
	for (; n >= 64; p += 64, n -= 64)
		block(s->h, p);
	memcpy(s->buf, p, n);
	s->fill = n;
}

void tgi_sha256_final(tgi_sha256 *s, unsigned char md[32])
{
	uint64_t bits = s->len * 8;
	unsigned char pad[72] = {0x80};
	size_t npad = (s->fill < 56 ? 56 : 120) - s->fill;
	for (int i = 0; i < 8; i++)
		pad[npad + i] = (unsigned char)(bits >> (56 - 8 * i));
	tgi_sha256_update(s, pad, npad + 8);
	for (int i = 0; i < 8; i++) {
		md[4 * i] = (unsigned char)(s->h[i] >> 24);
		md[4 * i + 1] = (unsigned char)(s->h[i] >> 16);
		md[4 * i + 2] = (unsigned char)(s->h[i] >> 8);
		md[4 * i + 3] = (unsigned char)s->h[i];
	}
}

/* ---- HMAC-SHA256 ---- */

void tgi_hmac_init(tgi_hmac *h, const void *key, size_t klen)
{
	unsigned char k[64] = {0}, ipad[64];
	if (klen > 64) {
		tgi_sha256 t;
		tgi_sha256_init(&t);
		tgi_sha256_update(&t, key, klen);
		tgi_sha256_final(&t, k);
	} else if (klen) {
		memcpy(k, key, klen);
	}
	for (int i = 0; i < 64; i++) {
		ipad[i] = k[i] ^ 0x36;
		h->opad[i] = k[i] ^ 0x5c;
	}
	tgi_sha256_init(&h->inner);
	tgi_sha256_update(&h->inner, ipad, 64);
	explicit_bzero(k, sizeof k);
	explicit_bzero(ipad, sizeof ipad);
}

void tgi_hmac_update(tgi_hmac *h, const void *data, size_t n)
{
	tgi_sha256_update(&h->inner, data, n);
}

void tgi_hmac_final(tgi_hmac *h, unsigned char mac[32])
{
	unsigned char in[32];
	tgi_sha256 outer;
	tgi_sha256_final(&h->inner, in);
	tgi_sha256_init(&outer);
	tgi_sha256_update(&outer, h->opad, 64);
	tgi_sha256_update(&outer, in, 32);
	tgi_sha256_final(&outer, mac);
	explicit_bzero(h, sizeof *h);
	explicit_bzero(in, sizeof in);
}

void tgi_hmac_sha256(const void *key, size_t klen, const void *data, size_t n,
                     unsigned char mac[32])
{
	tgi_hmac h;
	tgi_hmac_init(&h, key, klen);
	tgi_hmac_update(&h, data, n);
	tgi_hmac_final(&h, mac);
}

int tgi_ct_equal(const void *a, const void *b, size_t n)
{
	const volatile unsigned char *x = a, *y = b;
	unsigned char d = 0;
	for (size_t i = 0; i < n; i++)
		d |= x[i] ^ y[i];
	return d == 0;
}
