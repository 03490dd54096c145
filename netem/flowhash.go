package netem

// IP protocol numbers FlowHash knows.
const (
	protoTCP      = 6
	protoUDP      = 17
	protoHopOpts  = 0
	protoRouting  = 43
	protoFragment = 44
	protoAH       = 51
	protoDstOpts  = 60
)

// FlowHash keys an IP packet's flow for fair queueing: a hash of the IP
// version, source and destination addresses, transport protocol and, for TCP
// and UDP, the ports. IPv6 extension headers are skipped; non-first fragments
// hash without ports. It never fails: a packet too short for its addresses, or
// not IP, hashes to 0, and one cut before its ports hashes without them.
func FlowHash(ip []byte) uint64 {
	if len(ip) == 0 {
		return 0
	}
	switch ip[0] >> 4 {
	case 4:
		return flowHash4(ip)
	case 6:
		return flowHash6(ip)
	}
	return 0
}

func flowHash4(ip []byte) uint64 {
	ihl := int(ip[0]&0x0f) * 4
	if len(ip) < 20 || ihl < 20 {
		return 0
	}
	proto := ip[9]
	h := fnvAdd(fnvAdd(fnvOffset, 4), proto)
	h = fnvBytes(h, ip[12:20])
	first := ip[6]&0x1f == 0 && ip[7] == 0 // fragment offset 0
	return mix(hashPorts(h, proto, ip, ihl, first))
}

func flowHash6(ip []byte) uint64 {
	if len(ip) < 40 {
		return 0
	}
	proto, off, first := ip[6], 40, true
	// Extension headers; the bound stops a chain that never ends.
	for range 8 {
		if off+8 > len(ip) {
			break
		}
		switch proto {
		case protoHopOpts, protoRouting, protoDstOpts:
			proto, off = ip[off], off+(int(ip[off+1])+1)*8
			continue
		case protoFragment:
			first = ip[off+2] == 0 && ip[off+3]&0xf8 == 0
			proto, off = ip[off], off+8
			continue
		case protoAH:
			proto, off = ip[off], off+(int(ip[off+1])+2)*4
			continue
		}
		break
	}
	h := fnvAdd(fnvAdd(fnvOffset, 6), proto)
	h = fnvBytes(h, ip[8:40])
	return mix(hashPorts(h, proto, ip, off, first))
}

func hashPorts(h uint64, proto byte, ip []byte, off int, first bool) uint64 {
	if first && (proto == protoTCP || proto == protoUDP) && off+4 <= len(ip) {
		h = fnvBytes(h, ip[off:off+4])
	}
	return h
}

const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

func fnvAdd(h uint64, b byte) uint64 { return (h ^ uint64(b)) * fnvPrime }

func fnvBytes(h uint64, b []byte) uint64 {
	for _, c := range b {
		h = fnvAdd(h, c)
	}
	return h
}

// mix spreads FNV's weak high-to-low diffusion over all bits (splitmix64's
// finaliser), and keeps 0 for "no flow".
func mix(h uint64) uint64 {
	h ^= h >> 30
	h *= 0xbf58476d1ce4e5b9
	h ^= h >> 27
	h *= 0x94d049bb133111eb
	h ^= h >> 31
	if h == 0 {
		h = 1
	}
	return h
}
