package fairrw

import (
	"context"
	"time"

	"github.com/redis/rueidis"

	"github.com/fairrw/rwlock/internal/wait"
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
	quit chan struct{} // closed by close: run deletes what is queued and ends
	done chan struct{}
}

const (
	janitorQueue = 4096
	janitorBatch = 256
)

func newJanitor(rdb rueidis.Client, halt context.Context) *janitor {
	j := &janitor{rdb: rdb, halt: halt, keys: make(chan string, janitorQueue), quit: make(chan struct{}), done: make(chan struct{})}
	go j.run()
	return j
}

// drop queues key for deletion without blocking. A key dropped after
// close is left to expire: a release that rueidis held past Close's grace
// (see closeGrace) may still answer.
func (j *janitor) drop(key string) {
	select {
	case <-j.quit:
	case j.keys <- key:
	default:
	}
}

func (j *janitor) run() {
	defer close(j.done)
	batch := make([]string, 0, janitorBatch)
	for {
		var key string
		select {
		case key = <-j.keys:
		case <-j.quit:
			// What was queued before close still goes out.
			select {
			case key = <-j.keys:
			default:
				return
			}
		}
		batch = append(batch[:0], key)
	fill:
		for len(batch) < janitorBatch {
			select {
			case k := <-j.keys:
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
	ctx, cancel := context.WithTimeout(j.halt, 5*time.Second)
	defer cancel()
	// A DEL lost with its connection (reset, killed) is sent once more: a
	// latch left behind lives on for its whole accept window. Deleting a
	// latch twice changes nothing. The commands are built again for the
	// second try: rueidis recycles a command once it has been sent.
	for try := 0; ; try++ {
		failed := false
		for _, r := range j.rdb.DoMulti(ctx, j.commands(keys)...) {
			if r.Error() != nil {
				failed = true
			}
		}
		if !failed || try == 1 || wait.Sleep(ctx, nil, 50*time.Millisecond) != nil {
			return
		}
	}
}

// commands builds the DELs for keys, pinned as every command the Client
// builds is (rueidis may return from a call while its writer still reads
// the command: see internal/script's command).
func (j *janitor) commands(keys []string) rueidis.Commands {
	if j.rdb.Mode() != rueidis.ClientModeCluster {
		return rueidis.Commands{j.rdb.B().Del().Key(keys...).Build().Pin()}
	}
	bySlot := make(map[uint16][]string)
	for _, k := range keys {
		s := slotOf(k)
		bySlot[s] = append(bySlot[s], k)
	}
	cmds := make(rueidis.Commands, 0, len(bySlot))
	for _, group := range bySlot {
		cmds = append(cmds, j.rdb.B().Del().Key(group...).Build().Pin())
	}
	return cmds
}

// close flushes what is queued and stops.
func (j *janitor) close() {
	close(j.quit)
	<-j.done
}
