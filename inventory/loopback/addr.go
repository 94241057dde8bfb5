package loopback

import (
	"errors"
	"math/rand/v2"
	"net"
	"strconv"
)

// FreeAddr returns a loopback address with a port free right now, for a
// server started next. The port is below the kernel's ephemeral range
// (32768 and up on Linux; the kernel hands those to outgoing connections
// and to ":0" listeners), picked at random from 10000 to 32767: a port
// the kernel gave out could be taken by any outgoing connection before the
// server binds it, or while it restarts, which made tests fail only when
// another test run shared the machine.
func FreeAddr() (string, error) {
	for range 1000 {
		addr := "127.0.0.1:" + strconv.Itoa(10000+rand.IntN(22768))
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			continue
		}
		ln.Close()
		return addr, nil
	}
	return "", errors.New("loopback: no free port from 10000 to 32767")
}
