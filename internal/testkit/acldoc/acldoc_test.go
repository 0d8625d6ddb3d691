package acldoc

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func page(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "acl.md")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// Commands renders the blocks in the order asked, for another namespace,
// user and password; Blocks lists the roles in the page's order.
func TestCommands(t *testing.T) {
	path := page(t, "text\n\n```acl tenant\nACL SETUSER billing reset on >PASSWORD\nACL SETUSER billing ~billing:* ~{billing:*\n```\n\n```acl mutex\nACL SETUSER billing &redisson_lock__channel:{billing:*\n```\n")
	cmds, err := Commands(path, "shipping", "", "s3cret", "mutex", "tenant")
	if err != nil {
		t.Fatal(err)
	}
	got := make([]string, len(cmds))
	for i, c := range cmds {
		got[i] = strings.Join(c, " ")
	}
	want := []string{
		"ACL SETUSER shipping &redisson_lock__channel:{shipping:*",
		"ACL SETUSER shipping reset on >s3cret",
		"ACL SETUSER shipping ~shipping:* ~{shipping:*",
	}
	if !slices.Equal(got, want) {
		t.Errorf("Commands: %q, want %q", got, want)
	}
	cmds, err = Commands(path, "billing", "billing-2", "pw", "tenant")
	if err != nil || cmds[0][2] != "billing-2" {
		t.Errorf("Commands as another user: %q, %v", cmds, err)
	}
	_, order, err := Blocks(path)
	if err != nil || !slices.Equal(order, []string{"tenant", "mutex"}) {
		t.Errorf("Blocks: order %q, %v", order, err)
	}
}

// A page whose blocks cannot be read as written is an error, not a user
// with fewer rights.
func TestBlocksRefused(t *testing.T) {
	for what, text := range map[string]string{
		"unclosed":  "```acl tenant\nACL SETUSER billing on\n",
		"empty":     "```acl tenant\n```\n",
		"duplicate": "```acl tenant\nACL SETUSER billing on\n```\n```acl tenant\nACL SETUSER billing on\n```\n",
	} {
		if _, _, err := Blocks(page(t, text)); err == nil {
			t.Errorf("%s: no error", what)
		}
	}
	path := page(t, "```acl tenant\nSETUSER billing on\n```\n")
	if _, err := Commands(path, "billing", "", "pw", "tenant"); err == nil {
		t.Errorf("a line that is not ACL SETUSER: no error")
	}
	if _, err := Commands(path, "billing", "", "pw", "missing"); err == nil {
		t.Errorf("a missing block: no error")
	}
}
