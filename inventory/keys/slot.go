package keys

import "strings"

// Slots is the number of Redis Cluster hash slots.
const Slots = 16384

// Slot returns the Redis Cluster hash slot of a key, as the cluster
// specification defines it: CRC16 (XMODEM) of the key's hash tag (the text
// between the first '{' and the first '}' after it, when not empty), else
// of the whole key, mod 16384. Every key one script receives must have the
// same slot (Redis Cluster refuses the script otherwise); the tests check
// it with this function for every key shape the code builds.
func Slot(key string) int { return int(crc16(HashTag(key)) % Slots) }

// HashTag returns the part of key that decides its slot: the hash tag, or
// the whole key when it has none. Keys with equal HashTag share a slot.
func HashTag(key string) string {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			return key[i+1 : i+1+j]
		}
	}
	return key
}

// crc16 is CRC-16/XMODEM (polynomial 0x1021, initial value 0), the
// checksum Redis Cluster hashes keys with.
func crc16(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc = crc<<8 ^ crc16Table[byte(crc>>8)^s[i]]
	}
	return crc
}

var crc16Table = func() (t [256]uint16) {
	for i := range t {
		c := uint16(i) << 8
		for range 8 {
			if c&0x8000 != 0 {
				c = c<<1 ^ 0x1021
			} else {
				c <<= 1
			}
		}
		t[i] = c
	}
	return t
}()
