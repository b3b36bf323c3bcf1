package memory_test

import (
	"testing"

	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/store/memory"
	"github.com/turnstream/turnstream/pkg/store/storetest"
)

func TestContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T, clock *storetest.Clock, cursorKey []byte) chat.Store {
		return memory.New(memory.Options{Now: clock.Now, CursorKey: cursorKey})
	})
}
