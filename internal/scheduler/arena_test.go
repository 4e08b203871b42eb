package scheduler

import (
	"bytes"
	"testing"
)

// TestSlabHandsOutRoomThatDoesNotOverlap fills every slice a slab hands
// out, over several transactions' worth, and checks none was written
// over by another; after a reset the same blocks serve again.
func TestSlabHandsOutRoomThatDoesNotOverlap(t *testing.T) {
	var s slab[byte]
	var blocks int
	for round := range 3 {
		var got [][]byte
		for i := range 5_000 {
			n := 1 + i%300
			b := s.take(n)
			if len(b) != 0 || cap(b) != n {
				t.Fatalf("take(%d) = len %d cap %d, want len 0 cap %d", n, len(b), cap(b), n)
			}
			got = append(got, append(b, bytes.Repeat([]byte{byte(i)}, n)...))
		}
		// A take larger than a quarter block comes from the heap.
		if big := s.take(slabBlock); cap(big) != slabBlock {
			t.Fatalf("take(%d) has cap %d", slabBlock, cap(big))
		}
		for i, b := range got {
			if want := bytes.Repeat([]byte{byte(i)}, 1+i%300); !bytes.Equal(b, want) {
				t.Fatalf("round %d: slice %d was written over", round, i)
			}
		}
		if round == 0 {
			blocks = len(s.blocks)
		} else if len(s.blocks) != blocks {
			t.Fatalf("round %d: %d blocks for the takes that needed %d: reset does not serve them again", round, len(s.blocks), blocks)
		}
		s.reset()
	}
}

// TestSlabLetsGoOfABurstsBlocks: a transaction far larger than most (a
// burst written ahead) leaves the slab slabKeep blocks once reset.
func TestSlabLetsGoOfABurstsBlocks(t *testing.T) {
	var s slab[byte]
	for range 4 * slabKeep * slabBlock / 1000 {
		s.take(1000)
	}
	if len(s.blocks) <= slabKeep {
		t.Fatalf("%d blocks for %d MiB", len(s.blocks), 4*slabKeep*slabBlock>>20)
	}
	s.reset()
	if len(s.blocks) != slabKeep {
		t.Errorf("%d blocks kept, want %d", len(s.blocks), slabKeep)
	}
	if b := s.take(10); cap(b) != 10 {
		t.Errorf("take after reset: cap %d", cap(b))
	}
}
