//go:build !linux

package scratch

// memoryDir is "": outside Linux, os.TempDir it is.
func memoryDir() string { return "" }
