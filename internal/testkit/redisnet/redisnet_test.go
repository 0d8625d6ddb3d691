package redisnet

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// A retired port is not handed out for RetiredFor; it is again after.
func TestRetiredPortIsNotHandedOut(t *testing.T) {
	port, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	if retired(port) {
		t.Fatalf("FreePort returned %d, retired", port)
	}
	Retire(port)
	if !retired(port) {
		t.Fatalf("port %d not retired after Retire", port)
	}
	old := time.Now().Add(-RetiredFor - time.Second)
	if err := os.Chtimes(filepath.Join(retiredDir(), strconv.Itoa(port)), old, old); err != nil {
		t.Fatal(err)
	}
	if retired(port) {
		t.Fatalf("port %d still retired %v after Retire", port, RetiredFor+time.Second)
	}
}
