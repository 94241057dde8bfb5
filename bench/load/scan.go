package load

import "bytes"

// Field returns the value that follows the first occurrence of key (a
// quoted name with its colon, e.g. `"orderId":`) in a JSON body: the
// contents of a string (escapes left as they are), or the literal of a
// number, true, false or null. It returns nil when key is absent. It is a
// scan, not a parser: meant for the few fields the load generator reads
// from envelopes it knows, without allocating.
func Field(body []byte, key string) []byte {
	i := bytes.Index(body, []byte(key))
	if i < 0 {
		return nil
	}
	rest := body[i+len(key):]
	for len(rest) > 0 && (rest[0] == ' ' || rest[0] == '\t' || rest[0] == '\n' || rest[0] == '\r') {
		rest = rest[1:]
	}
	if len(rest) == 0 {
		return nil
	}
	if rest[0] == '"' {
		for j := 1; j < len(rest); j++ {
			switch rest[j] {
			case '\\':
				j++
			case '"':
				return rest[1:j]
			}
		}
		return nil
	}
	j := 0
	for j < len(rest) && rest[j] != ',' && rest[j] != '}' && rest[j] != ']' && rest[j] != ' ' && rest[j] != '\n' {
		j++
	}
	return rest[:j]
}
