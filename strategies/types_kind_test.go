package strategies

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestKindText: every kind encodes as its name and back, and only the kinds
// a later call may fix are temporary.
func TestKindText(t *testing.T) {
	for k := Success; k <= Unreachable; k++ {
		b, err := json.Marshal(k)
		if err != nil {
			t.Fatal(err)
		}
		if want := `"` + k.String() + `"`; string(b) != want {
			t.Errorf("json.Marshal(%d) = %s, want %s", k, b, want)
		}
		var back Kind
		if err := json.Unmarshal(b, &back); err != nil || back != k {
			t.Errorf("json.Unmarshal(%s) = %v, %v; want %v", b, back, err, k)
		}
		if want := k == Throttled || k == Overloaded || k == Unreachable; k.Temporary() != want {
			t.Errorf("%v.Temporary() = %v, want %v", k, k.Temporary(), want)
		}
	}
	var k Kind
	if err := json.Unmarshal([]byte(`"throttle"`), &k); err == nil || !strings.Contains(err.Error(), `unknown kind "throttle"`) {
		t.Errorf("json.Unmarshal(\"throttle\"): %v, want an error naming it", err)
	}
	if _, err := json.Marshal(Kind(9)); err == nil {
		t.Error("json.Marshal(Kind(9)): no error")
	}
}
