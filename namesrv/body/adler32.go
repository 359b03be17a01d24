package body

import "encoding/binary"

// updateAdler32 is hash/adler32's Update, eight bytes at a time. The standard
// library's adds byte by byte through two dependent sums and took half of
// the time of inflating a large registration; this one keeps per-column
// byte sums in 16-bit lanes of a word and applies each byte's weight once
// per block. TestAdler32 and FuzzInflate hold it to the standard one.
func updateAdler32(adler uint32, p []byte) uint32 {
	const (
		mod   = 65521
		lanes = 0x00FF00FF00FF00FF
		// wordsPerBlock keeps a lane's column sum, at most 255 per word,
		// below 1<<16.
		wordsPerBlock = 256
	)
	s1, s2 := uint64(adler&0xffff), uint64(adler>>16)
	for len(p) >= 8 {
		n := min(len(p)/8, wordsPerBlock)
		// For the block's bytes x_t, t < N = 8n: s1 += Σ x_t and
		// s2 += N*s1 + Σ (N-t) x_t. With t = 8k+j, (N-t) = 8(n-k) - j:
		// Σ (N-t) x_t = 8 Σ_k (n-k) W_k - Σ_j j C_j, where W_k is word k's
		// byte sum and C_j the sum of the bytes at j in each word.
		// Σ_k (n-k) W_k is the sum of the running sums of W (sums).
		var sum, sums, even, odd uint64
		for q := p[: 8*n : 8*n]; len(q) >= 8; q = q[8:] {
			w := binary.LittleEndian.Uint64(q)
			e, o := w&lanes, (w>>8)&lanes
			even += e
			odd += o
			// The four 16-bit lanes of e+o, added into the top lane.
			sum += (e + o) * 0x0001000100010001 >> 48
			sums += sum
		}
		weighted := 2*(even>>16&0xffff) + 4*(even>>32&0xffff) + 6*(even>>48) +
			(odd & 0xffff) + 3*(odd>>16&0xffff) + 5*(odd>>32&0xffff) + 7*(odd>>48)
		s2 = (s2 + uint64(8*n)*s1 + 8*sums - weighted) % mod
		s1 = (s1 + sum) % mod
		p = p[8*n:]
	}
	for _, x := range p {
		s1 += uint64(x)
		s2 += s1
	}
	return uint32(s2%mod)<<16 | uint32(s1%mod)
}
