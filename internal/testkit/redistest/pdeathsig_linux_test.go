package redistest

import (
	"bufio"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

const childEnv = "REDISTEST_PDEATHSIG_CHILD"

// TestPdeathsigChild is the child half of TestProcessDiesWithTestBinary.
func TestPdeathsigChild(t *testing.T) {
	if os.Getenv(childEnv) != "1" {
		t.Skip("helper for TestProcessDiesWithTestBinary")
	}
	r := StartProcess(t)
	os.Stdout.WriteString("PID=" + strconv.Itoa(pid(r)) + "\n")
	time.Sleep(time.Minute) // killed by the parent long before
}

// alive reports whether pid exists and is not a zombie (in a container the
// orphaned redis-server may be reparented to a PID 1 that never reaps).
func alive(pid int) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || (s[i+2] != 'Z' && s[i+2] != 'X')
}

// TestProcessDiesWithTestBinary checks that redis-server does not outlive a
// test binary that dies without running cleanups (e.g. a -timeout panic).
func TestProcessDiesWithTestBinary(t *testing.T) {
	needRedisServer(t)
	t.Parallel()
	cmd := exec.Command(os.Args[0], "-test.run=^TestPdeathsigChild$", "-test.v")
	cmd.Env = append(os.Environ(), childEnv+"=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer cmd.Process.Kill()

	redisPid := 0
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "PID="); ok {
			redisPid, _ = strconv.Atoi(v)
			break
		}
	}
	if redisPid == 0 {
		t.Fatalf("child did not report a redis-server pid (scan error %v)", sc.Err())
	}
	if !alive(redisPid) {
		t.Fatalf("redis-server %d not running while the child lives", redisPid)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for alive(redisPid) {
		if time.Now().After(deadline) {
			t.Fatalf("redis-server %d still alive 10s after its test binary was killed", redisPid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
