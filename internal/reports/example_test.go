package reports_test

import (
	"fmt"
	"os"

	"github.com/ratelab/ratelab/internal/reports"
	"github.com/ratelab/ratelab/measure"
)

func ExampleFormat() {
	render, err := reports.Format("csv")
	if err != nil {
		fmt.Println(err)
		return
	}
	r := reports.Report{Scenario: "demo", Results: []reports.Result{
		{Name: "semaphore-20", Kind: "semaphore", Summary: measure.Summary{Items: 200, Completed: 200, Attempts: 200, AttemptsPerCall: 1, WallSeconds: 5}},
	}}
	if err := render(os.Stdout, r); err != nil {
		fmt.Println(err)
	}
	_, err = reports.Format("xml")
	fmt.Println(err)
	// Output:
	// scenario,name,kind,items,completed,failed,attempts,throttled,overloaded,server_errors,errors,attempts_per_call,max_attempts,failed_tokens,input_tokens,output_tokens,wall_seconds,oracle_seconds,wall_over_oracle,end_to_end_p50,end_to_end_p90,end_to_end_p99,end_to_end_max,attempt_p50,attempt_p99,wait_slot_p50,wait_slot_p99,wait_tokens_p50,wait_tokens_p99,backoff_p50,backoff_p99,ttft_p50,ttft_p99,final_limit,expectations,expectations_failed,incomplete,canceled,invalid,wait_retry_after_p50,wait_retry_after_p99,wait_retry_after_max,early_retries,peak_concurrency,command_status,command_exit_code,command_timed_out,command_seconds,simulated
	// demo,semaphore-20,semaphore,200,200,0,200,0,0,0,0,1,0,0,0,0,5,,,0,0,0,0,0,0,0,0,0,0,0,0,,,,0,0,false,0,0,0,0,0,,,,,,,false
	// reports: unknown format "xml" (want table, json, csv or markdown)
}

func ExampleCompare() {
	old := reports.Report{Scenario: "20-concurrent", Results: []reports.Result{
		{Name: "semaphore-20", Summary: measure.Summary{Completed: 200, Attempts: 200, AttemptsPerCall: 1, WallSeconds: 5.0}},
	}}
	new := reports.Report{Scenario: "20-concurrent", Results: []reports.Result{
		{Name: "semaphore-20", Summary: measure.Summary{Completed: 200, Attempts: 260, Throttled: 60, AttemptsPerCall: 1.3, WallSeconds: 5.1}},
	}}
	c, err := reports.Compare(old, new, 0.10)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("regressed:", c.Regressed())
	for _, m := range c.Strategies[0].Metrics {
		if m.Regressed {
			fmt.Printf("%s: %v → %v\n", m.Metric, m.Old, m.New)
		}
	}
	// Output:
	// regressed: true
	// attempts: 200 → 260
	// 429s: 0 → 60
	// attempts/call: 1 → 1.3
}
