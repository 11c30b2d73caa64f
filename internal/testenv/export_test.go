package testenv

// EmulatorHost is the emulator behind the binary's query recorder, for a test to put a recorder
// of its own in front of it (whose queries the binary's check then does not see).
func EmulatorHost() string { return fsEmulator }
