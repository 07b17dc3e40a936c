package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"runtime/metrics"
	"runtime/pprof"
	"sync"
	"time"
)

// profiles are run's --cpuprofile and --memprofile: what `go tool pprof`
// reads, to see where loadgen's own time and memory go.
type profiles struct {
	cpu, mem string

	cpuFile *os.File
	stop    chan struct{}
	done    sync.WaitGroup
	memErr  error
}

func (p *profiles) flags(fs *flag.FlagSet) {
	fs.StringVar(&p.cpu, "cpuprofile", "", "write a CPU profile of the run to `FILE`")
	fs.StringVar(&p.mem, "memprofile", "", "write a heap profile, taken when the live heap was largest, to `FILE`")
}

// heapSample is how often --memprofile looks at the live heap.
const heapSample = 100 * time.Millisecond

// start starts the CPU profile, and the sampler that writes the heap
// profile whenever the live heap is larger than it has been (the file
// ends up holding the profile of the largest).
func (p *profiles) start() error {
	if p.cpu != "" {
		f, err := os.Create(p.cpu)
		if err != nil {
			return fmt.Errorf("--cpuprofile: %w", err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return fmt.Errorf("--cpuprofile: %w", err)
		}
		p.cpuFile = f
	}
	if p.mem != "" {
		if err := p.writeHeap(); err != nil { // the file is writable
			p.stopCPU()
			return err
		}
		p.stop = make(chan struct{})
		p.done.Add(1)
		go p.sampleHeap()
	}
	return nil
}

func (p *profiles) sampleHeap() {
	defer p.done.Done()
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	var largest uint64
	t := time.NewTicker(heapSample)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
		}
		metrics.Read(s)
		if v := s[0].Value.Uint64(); v > largest {
			largest = v
			if err := p.writeHeap(); err != nil {
				p.memErr = err
				return
			}
		}
	}
}

func (p *profiles) writeHeap() error {
	f, err := os.Create(p.mem)
	if err != nil {
		return fmt.Errorf("--memprofile: %w", err)
	}
	err = pprof.Lookup("heap").WriteTo(f, 0)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("--memprofile: %w", err)
	}
	return nil
}

func (p *profiles) stopCPU() error {
	if p.cpuFile == nil {
		return nil
	}
	pprof.StopCPUProfile()
	err := p.cpuFile.Close()
	p.cpuFile = nil
	if err != nil {
		return fmt.Errorf("--cpuprofile: %w", err)
	}
	return nil
}

// finish stops both profiles and reports what went wrong writing them.
func (p *profiles) finish() error {
	if p.stop != nil {
		close(p.stop)
		p.done.Wait()
		p.stop = nil
	}
	return errors.Join(p.stopCPU(), p.memErr)
}
