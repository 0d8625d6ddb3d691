// Package acldoc reads the ACL lines of docs/acl.md, so that the tests and
// benchmarks build their Redis users from exactly what the page tells an
// operator to run, and the page and its tests cannot drift apart.
//
// The page writes each block in a fenced code block "```acl <role>", for
// the namespace "billing", with the password "PASSWORD".
package acldoc

import (
	"fmt"
	"os"
	"strings"
)

// Namespace and Password are the placeholders the page writes its lines
// with.
const (
	Namespace = "billing"
	Password  = "PASSWORD"
)

// Blocks returns every block of the page at path, by role, in the page's
// order of roles (order).
func Blocks(path string) (blocks map[string][]string, order []string, err error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	blocks = map[string][]string{}
	role := ""
	for line := range strings.SplitSeq(string(b), "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case role == "" && strings.HasPrefix(trimmed, "```acl "):
			role = strings.TrimPrefix(trimmed, "```acl ")
			if _, dup := blocks[role]; dup {
				return nil, nil, fmt.Errorf("%s: two blocks ```acl %s", path, role)
			}
			blocks[role] = nil
			order = append(order, role)
		case role != "" && trimmed == "```":
			if len(blocks[role]) == 0 {
				return nil, nil, fmt.Errorf("%s: the block %q is empty", path, role)
			}
			role = ""
		case role != "":
			blocks[role] = append(blocks[role], line)
		}
	}
	if role != "" {
		return nil, nil, fmt.Errorf("%s: the block %q is not closed", path, role)
	}
	return blocks, order, nil
}

// Block returns the lines of the block of role.
func Block(path, role string) ([]string, error) {
	blocks, _, err := Blocks(path)
	if err != nil {
		return nil, err
	}
	lines, ok := blocks[role]
	if !ok {
		return nil, fmt.Errorf("%s: no block ```acl %s", path, role)
	}
	return lines, nil
}

// Commands returns the commands of the blocks of roles, in that order, each
// as its arguments: for namespace ns instead of "billing", for the user
// user instead of the one written ("" keeps it), with password.
func Commands(path, ns, user, password string, roles ...string) ([][]string, error) {
	var cmds [][]string
	for _, role := range roles {
		lines, err := Block(path, role)
		if err != nil {
			return nil, err
		}
		for _, line := range lines {
			fields := strings.Fields(line)
			if len(fields) < 3 || !strings.EqualFold(fields[0], "ACL") || !strings.EqualFold(fields[1], "SETUSER") {
				return nil, fmt.Errorf("%s: block %q: %q is not an ACL SETUSER line", path, role, line)
			}
			for i := range fields {
				fields[i] = strings.ReplaceAll(fields[i], Namespace, ns)
				if fields[i] == ">"+Password {
					fields[i] = ">" + password
				}
			}
			if user != "" {
				fields[2] = user
			}
			cmds = append(cmds, fields)
		}
	}
	return cmds, nil
}
