package slot

import "testing"

func TestOf(t *testing.T) {
	// Reference values from the Redis Cluster specification and CLUSTER KEYSLOT.
	tests := []struct {
		key  string
		want uint16
	}{
		{"123456789", 0x31C3 % Count},
		{"foo", 12182},
		{"bar", 5061},
		{"{user1000}.following", 3443},
		{"{user1000}.followers", 3443},
		{"user1000", 3443},
		{"foo{}{bar}", Of("foo{}{bar}")},
		{"foo{{bar}}zap", Of("{bar")},
		{"foo{bar}{zap}", Of("bar")},
	}
	for _, tt := range tests {
		if got := Of(tt.key); got != tt.want {
			t.Errorf("Of(%q) = %d, want %d", tt.key, got, tt.want)
		}
	}
}

func TestTag(t *testing.T) {
	tests := []struct{ key, want string }{
		{"plain", "plain"},
		{"{tag}rest", "tag"},
		{"a{tag}b{c}", "tag"},
		{"a{}b", "a{}b"},
		{"a{b", "a{b"},
		{"a}b{c}", "c"},
		{"{{x}}", "{x"},
	}
	for _, tt := range tests {
		if got := Tag(tt.key); got != tt.want {
			t.Errorf("Tag(%q) = %q, want %q", tt.key, got, tt.want)
		}
	}
}
