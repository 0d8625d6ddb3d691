package fairrw

import (
	"context"
	"time"

	"github.com/redis/rueidis"
)

// janitor deletes unlock latches once their unlock has answered, as Java
// does after each unlock, but batched: deletes queue up and go out in one
// DoMulti per batch, so an unlock costs no extra round trip. A latch whose
// delete is dropped (queue full, Client closing) expires by itself after the
// unlock timeout.
type janitor struct {
	rdb  rueidis.Client
	halt context.Context // ends when a Shutdown is cut short: a delete under way gives up
	keys chan string
	done chan struct{}
}

const (
	janitorQueue = 4096
	janitorBatch = 256
)

func newJanitor(rdb rueidis.Client, halt context.Context) *janitor {
	j := &janitor{rdb: rdb, halt: halt, keys: make(chan string, janitorQueue), done: make(chan struct{})}
	go j.run()
	return j
}

// drop queues key for deletion without blocking.
func (j *janitor) drop(key string) {
	select {
	case j.keys <- key:
	default:
	}
}

func (j *janitor) run() {
	defer close(j.done)
	batch := make([]string, 0, janitorBatch)
	for key := range j.keys {
		batch = append(batch[:0], key)
	fill:
		for len(batch) < janitorBatch {
			select {
			case k, ok := <-j.keys:
				if !ok {
					break fill
				}
				batch = append(batch, k)
			default:
				break fill
			}
		}
		j.delete(batch)
	}
}

// delete removes a batch with as few commands as the deployment allows:
// one multi-key DEL on a single node, one DEL per slot on a cluster (a
// cross-slot DEL would be refused, and the rueidis cluster client panics on
// building one).
func (j *janitor) delete(keys []string) {
	var cmds rueidis.Commands
	if j.rdb.Mode() == rueidis.ClientModeCluster {
		bySlot := make(map[uint16][]string)
		for _, k := range keys {
			s := slotOf(k)
			bySlot[s] = append(bySlot[s], k)
		}
		for _, group := range bySlot {
			cmds = append(cmds, j.rdb.B().Del().Key(group...).Build())
		}
	} else {
		cmds = append(cmds, j.rdb.B().Del().Key(keys...).Build())
	}
	ctx, cancel := context.WithTimeout(j.halt, 5*time.Second)
	defer cancel()
	j.rdb.DoMulti(ctx, cmds...)
}

// close flushes what is queued and stops. No drop may follow it: Close calls
// it once no call is in progress.
func (j *janitor) close() {
	close(j.keys)
	<-j.done
}
