// Package actionrun runs the actions of confirmed assistant turns: it calls the business's action
// URL once per action (a double run waits instead of calling twice), records the answer, and
// tells the user the result exactly once through package delivery.
package actionrun
