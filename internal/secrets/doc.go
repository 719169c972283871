// Package secrets decrypts SOPS files with age identities that the caller
// hands over explicitly, and knows which values came out of a decryption so
// they can be masked wherever ferry prints.
package secrets
