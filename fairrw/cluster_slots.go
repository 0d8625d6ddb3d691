package fairrw

import (
	"net"
	"strconv"

	"github.com/redis/rueidis"
)

// slotRange is one entry of CLUSTER SLOTS: slots from..to, the address of
// the primary serving them ("" when its host is not a string: a null or
// unknown endpoint), and the node it is (its ID when the answer gives
// one, else that address).
type slotRange struct {
	from, to int
	primary  string
	node     string
}

// slotRanges parses a CLUSTER SLOTS answer; false if it does not parse.
func slotRanges(msgs []rueidis.RedisMessage) ([]slotRange, bool) {
	ranges := make([]slotRange, 0, len(msgs))
	for _, r := range msgs {
		fields, err := r.ToArray()
		if err != nil || len(fields) < 3 {
			return nil, false
		}
		from, ferr := fields[0].AsInt64()
		to, terr := fields[1].AsInt64()
		primary, err := fields[2].ToArray()
		if ferr != nil || terr != nil || err != nil || len(primary) < 2 {
			return nil, false
		}
		port, perr := primary[1].AsInt64()
		if perr != nil {
			return nil, false
		}
		rg := slotRange{from: int(from), to: int(to)}
		if host, err := primary[0].ToString(); err == nil && host != "" && host != "?" {
			rg.primary = net.JoinHostPort(host, strconv.FormatInt(port, 10))
		}
		rg.node = rg.primary
		if len(primary) > 2 {
			if id, err := primary[2].ToString(); err == nil && id != "" {
				rg.node = id
			}
		}
		if rg.node == "" {
			return nil, false
		}
		ranges = append(ranges, rg)
	}
	return ranges, true
}
