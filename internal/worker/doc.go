// Package worker is the private service Cloud Tasks calls: process_inbound normalises a delivery
// and fans it out into one outbound task per message (recording statuses on the way), and
// process_outbound sends each reply through the Graph API exactly once.
package worker
