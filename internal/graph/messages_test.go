package graph_test

import (
	"encoding/json"
	"testing"

	"github.com/wapipe/wapipe/internal/graph"
)

// TestCoordinateKeepsWhatWasWritten: a coordinate is read from a number or from a string of
// decimal degrees (Meta's examples send strings) and written back exactly as it was read;
// anything else is a type error.
func TestCoordinateKeepsWhatWasWritten(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in   string
		deg  float64
		fail bool
	}{
		{in: `37.44216251868683`, deg: 37.44216251868683},
		{in: `"37.44216251868683"`, deg: 37.44216251868683},
		{in: `-122.16153582049394`, deg: -122.16153582049394},
		{in: `"-8.65"`, deg: -8.65},
		{in: `" -8.65"`, fail: true},
		{in: `1e1`, deg: 10},
		{in: `0`, deg: 0},
		{in: `"north"`, fail: true},
		{in: `true`, fail: true},
		{in: `"NaN"`, fail: true},
		{in: `"Inf"`, fail: true},
		{in: `"0x1p-2"`, fail: true},
		{in: `{}`, fail: true},
	}
	for _, c := range cases {
		var l graph.Location
		err := json.Unmarshal([]byte(`{"latitude":`+c.in+`,"longitude":1}`), &l)
		if c.fail {
			if err == nil {
				t.Errorf("%s: accepted, want a type error", c.in)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.in, err)
			continue
		}
		if d, err := l.Latitude.Degrees(); err != nil || d != c.deg {
			t.Errorf("%s: %v degrees (%v), want %v", c.in, d, err, c.deg)
		}
		out, err := json.Marshal(l)
		if want := `{"latitude":` + compact(c.in) + `,"longitude":1}`; err != nil || string(out) != want {
			t.Errorf("%s: written as %s (%v), want %s", c.in, out, err, want)
		}
	}
	if out, _ := json.Marshal(graph.Location{Latitude: graph.NewCoordinate(-8.65), Longitude: graph.NewCoordinate(115.2167)}); string(out) != `{"latitude":-8.65,"longitude":115.2167}` {
		t.Errorf("NewCoordinate: %s", out)
	}
	if (graph.Coordinate{}).IsZero() != true || graph.NewCoordinate(0).IsZero() {
		t.Error("IsZero: the zero value is absent, 0 degrees is not")
	}
}

// compact is the JSON literal s as encoding/json writes it.
func compact(s string) string {
	b, _ := json.Marshal(json.RawMessage(s))
	return string(b)
}
