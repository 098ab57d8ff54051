package main

import (
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/duckicelake/duckicelake/internal/config"
)

// commandFlags returns the FlagSet of `duckicelake name`: errors go to
// stderr and -h prints usage followed by the flags' defaults.
func commandFlags(name, usage string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usage)
		fs.PrintDefaults()
	}
	return fs
}

// parseCommand parses args; done says the command ends here with code: 0
// after -h (usage on the FlagSet's output), 2 after a bad flag.
func parseCommand(fs *flag.FlagSet, args []string) (code int, done bool) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0, true
		}
		return 2, true
	}
	return 0, false
}

// strayArgument reports on stderr an argument that is not a flag, for a
// command that takes none.
func strayArgument(fs *flag.FlagSet, stderr io.Writer) bool {
	if fs.NArg() == 0 {
		return false
	}
	fmt.Fprintf(stderr, "duckicelake %s: unexpected argument %q\n", fs.Name(), fs.Arg(0))
	return true
}

// commandConfig loads the settings of flags (flags, environment, config
// file) and checks that the required keys are set; a failure is reported on
// stderr as the command's and ok is false (the command exits 2).
func commandConfig(fs *flag.FlagSet, flags *config.Flags, lookupEnv func(string) (string, bool), stderr io.Writer, required ...string) (cfg *config.Config, ok bool) {
	cfg, err := flags.Load(lookupEnv)
	if err == nil {
		err = cfg.Require(required...)
	}
	if err != nil {
		fmt.Fprintf(stderr, "duckicelake %s: %v\n", fs.Name(), err)
		return nil, false
	}
	return cfg, true
}
