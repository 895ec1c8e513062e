package engine

import (
	"os"
	"testing"

	"github.com/redcell/redcell/internal/testkit"
)

// TestMain fails the package's run on a panic recovered that no test
// expected (testkit.Main).
func TestMain(m *testing.M) { os.Exit(testkit.Main(m)) }
