// A helper the tests start as a real second process: it writes through the library and then waits to be
// killed, so the tests can prove what reached disk.
//
//   rdefaults-test-helper flush DOMAIN KEY INT    write, flush(), print "ready", wait
//   rdefaults-test-helper noflush DOMAIN KEY INT  write, print "written", wait (the coalesced save must land)
//   rdefaults-test-helper write DOMAIN KEY INT    write, print the write's time (ns since boot), exit
//   rdefaults-test-helper exit DOMAIN KEY INT     write, exit at once (the save at exit must keep it)
//   rdefaults-test-helper fds DOMAIN KEY INT      print descriptor counts before, while and after other suites are open
//   rdefaults-test-helper sweep DOMAIN OTHER      write k=1 to both, print "written", flush DOMAIN only, print
//                                                 "flushed"
//   rdefaults-test-helper churn DOMAIN N          fill k0..k<N-1> (once), print "ready"; on a line of input, save
//                                                 changes until killed (back to back for 30 s, then once a second)
//   rdefaults-test-helper plainedits DOMAIN N     fill k0..k<N-1> (once), print "ready"; on a line of input, until
//                                                 killed: a plain `UserDefaults` write, and an edit (which has
//                                                 corelibs save it)
//   rdefaults-test-helper count DOMAIN            print how many keys the domain has, opened through the library
//   rdefaults-test-helper count --file PATH       the same for a file store
//   rdefaults-test-helper fsize DOMAIN            save; on a line of input, fail a save (file size limit); on the
//                                                 next, lift the limit and save again
//   rdefaults-test-helper many N                  write one key to N suites with 256 descriptors at most, exit
//   rdefaults-test-helper userrace DOMAIN N       N write-then-read rounds while 3 threads call getpwuid; print
//                                                 "STALE N" (reads that missed the write just made), exit
//   rdefaults-test-helper increment DOMAIN KEY N  on a line of input, `update { $0 += 1 }` N times; print "done", exit
//   rdefaults-test-helper racy DOMAIN KEY N       the same with `store[k] = store[k] + 1` and `flush()` (loses updates)
//   rdefaults-test-helper stall DOMAIN KEY INT    edit: write KEY, print "inside", wait inside the body (to be killed)
//   rdefaults-test-helper readloop DOMAIN N       read keys k0… in a tight loop until N changes of "round" arrived
//                                                 (or 60 s passed); print "CHANGES READS ABSENT", exit
//   rdefaults-test-helper check [--seeds A,B] [--histories N] [--seconds S] [--bound-ms M] [--first-seed N]
//                                                 run randomized multi-process histories and check them
//                                                 (HistoryDriver.swift)
//   rdefaults-test-helper worker PLAN INDEX       one worker of such a history
//   rdefaults-test-helper group                   start `group-of PGID` as the checker's workers start tools; print
//                                                 "same group" when it ran in this process's group, else "own group"
//   rdefaults-test-helper syncwrite DOMAIN FOLDER KEY INT
//                                                 sync KEY with the synced folder, write INT, print "synced" once
//                                                 the folder holds it, exit on a line of input (SyncWrite.swift)
//   rdefaults-test-helper devices [--seeds A,B] [--histories N] [--first-seed N] [--seconds S]
//                                 [--folder|--both|--processes|--all] [--plan FILE]
//                                                 randomized histories of syncing devices, checked
//                                                 (DeviceChecker.swift)
//   rdefaults-test-helper device FOLDER SKEW TIME [KEY=INT ...]
//                                                 one device of such a history, a process of its own that
//                                                 answers the driver's lines (DeviceWorker.swift)
//   rdefaults-test-helper migrate DOMAIN          on a line of input, migrate (a custom step counts its runs in the
//                                                 key "runs", a rename moves "old" to "new"); print the steps applied
import Dispatch
import Foundation
import ReactiveDefaults
import Synchronization

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

let arguments = CommandLine.arguments
if arguments.count >= 2 && arguments[1] == "check" { runChecker(Array(arguments.dropFirst(2))) }
if arguments.count == 4 && arguments[1] == "worker" { runWorker(planPath: arguments[2], index: Int(arguments[3]) ?? 0) }
if arguments.count >= 2 && arguments[1] == "syncwrite" { runSyncWrite(Array(arguments.dropFirst(2))) }
if arguments.count >= 2 && arguments[1] == "devices" { runDeviceChecker(Array(arguments.dropFirst(2))) }
if arguments.count >= 2 && arguments[1] == "device" { runDeviceWorker(Array(arguments.dropFirst(2))) }
func say(_ line: String) { FileHandle.standardOutput.write(Data((line + "\n").utf8)) }

switch (arguments.count, arguments.dropFirst().first) {
case (4, "churn"), (4, "plainedits"):
  // Saves of a large suite until killed: the tests kill it at chosen moments. `churn`: the library's writes and a
  // save, one after another; `plainedits`: a plain `UserDefaults` write, then an edit, which has corelibs save the
  // plain write first, in place.
  guard let store = DefaultsStore(suiteName: arguments[2]), let count = Int(arguments[3]),
    let plain = UserDefaults(suiteName: arguments[2])
  else { exit(64) }
  func key(_ index: Int) -> DefaultsKey<Int> { DefaultsKey("k\(index)", default: -1) }
  let found = store.userDefaults.persistentDomain(forName: arguments[2])?.count ?? 0
  if store[key(count - 1)] == -1 {
    for index in 0..<count { store[key(index)] = 0 }
    try store.save()
  }
  say("ready \(found)")
  // Nothing is saved before the test says so: the test arms its kill first, and a test that waits long for its turn
  // (a loaded machine) does not leave this process saving meanwhile.
  _ = readLine()
  // Until killed, or until the test that started it is gone: a test process killed before it could kill this one
  // would leave it saving forever, taking a core from whatever runs next. Back to back for 30 s, then one save a
  // second: a test kills it within a second or two, but one whose task waits for a busy pool (hundreds of tests at
  // once, under the thread sanitizer) came back after many minutes, while two of these took a core between them.
  let parent = getppid()
  let started = ContinuousClock.now
  var round = 0
  while getppid() == parent {
    round += 1
    if arguments[1] == "churn" {
      store[DefaultsKey<Int>("round", default: 0)] = round
      store[key(round % count)] = round
      try store.save()
    } else {
      plain.set(round, forKey: "plain")
      try store.edit { $0[DefaultsKey<Int>("round", default: 0)] = round }
    }
    if ContinuousClock.now - started > .seconds(30) { usleep(1_000_000) }
  }
  exit(0)
case (4, "readloop"):
  // A reader of a suite another process keeps saving (`churn`): every key it reads exists, so a read of the default
  // means this process loaded a torn file.
  guard let store = DefaultsStore(suiteName: arguments[2]), let wanted = Int(arguments[3]) else { exit(64) }
  let changes = Atomic<Int>(0)
  let token = store.property(DefaultsKey<Int>("round", default: 0)).observe(initial: false) { _ in
    changes.add(1, ordering: .relaxed)
  }
  say("ready")
  var reads = 0
  var absent = 0
  let deadline = Date() + 60
  while changes.load(ordering: .relaxed) < wanted && Date() < deadline {
    for index in stride(from: 0, to: 10_000, by: 997) {
      reads += 1
      if store[DefaultsKey<Int>("k\(index)", default: -1)] == -1 { absent += 1 }
    }
  }
  token.cancel()
  say("\(changes.load(ordering: .relaxed)) \(reads) \(absent)")
  exit(0)
case (5, "increment"), (5, "racy"):
  guard let store = DefaultsStore(suiteName: arguments[2]), let count = Int(arguments[4]) else { exit(64) }
  let key = DefaultsKey<Int>(arguments[3], default: 0)
  say("ready")
  _ = readLine()
  for _ in 0..<count {
    if arguments[1] == "increment" {
      try store.property(key).update { $0 += 1 }
    } else {
      store[key] = store[key] + 1
      try store.save()
    }
  }
  say("done")
  exit(0)
case (5, "stall"):
  guard let store = DefaultsStore(suiteName: arguments[2]), let value = Int(arguments[4]) else { exit(64) }
  try store.edit { tx in
    tx[DefaultsKey<Int>(arguments[3], default: 0)] = value
    say("inside")
    while true { pause() }  // until killed
  }
case (5, "fds"):
  // Counts this process's descriptors with no store open (a warm-up store opened and released first: Foundation and
  // Dispatch open descriptors of their own lazily on first use), with stores of the suite open and observed, and
  // after the last of them is released. Every write is saved first: a save holds descriptors while it runs.
  let key = DefaultsKey<Int>(arguments[3], default: 0)
  func descriptors() -> Int {
    #if os(Linux)
      let folder = "/proc/self/fd"
    #else
      let folder = "/dev/fd"
    #endif
    return (try? FileManager.default.contentsOfDirectory(atPath: folder).count) ?? -1
  }
  func openObserveAndRelease(_ name: String) -> Int {
    var stores = (0..<3).compactMap { _ in DefaultsStore(suiteName: name) }
    stores[0][key] = 1
    stores[0].flush()
    let tokens = stores.map { $0.property(key).observe { _ in } }
    let during = descriptors()
    for token in tokens { token.cancel() }
    stores.removeAll()
    return during
  }
  // A reload started by a file event holds the suite's persistence (and so its watch) until it ends, on a background
  // thread: each count is taken once it is down to the one wanted, or after `seconds` (Foundation and Dispatch keep
  // what they opened lazily for the warm-up store, so the count before may stay above the count at the start: that
  // wait is short). The last wait is the check's failure bound: 30 s, since beside a whole test suite on 2 cores the
  // watcher's thread and a late reload can take seconds to run (CI once counted one descriptor too many after 2 s).
  func descriptors(downTo target: Int, within seconds: Double) -> Int {
    let deadline = Date() + seconds
    var count = descriptors()
    while count > target && Date() < deadline {
      usleep(1000)
      count = descriptors()
    }
    return count
  }
  let start = descriptors()
  _ = openObserveAndRelease(arguments[2] + ".warm")
  let before = descriptors(downTo: start, within: 2)
  let during = openObserveAndRelease(arguments[2])
  say("\(before) \(during) \(descriptors(downTo: before, within: 30))")
  exit(0)
case (3, "migrate"):
  guard let store = DefaultsStore(suiteName: arguments[2]) else { exit(64) }
  let runs = DefaultsKey<Int>("runs", default: 0)
  say("ready")
  _ = readLine()
  let applied = try store.migrate([
    .custom("count-runs") { tx in tx[runs] += 1 },
    .rename("old", to: DefaultsKey<String>("new", default: "")),
  ])
  say("applied \(applied.count)")
  exit(0)
case (2, "group"):
  // A worker's tools must die with it when the driver kills the worker's process group.
  let status = runProgram(CommandLine.arguments[0], ["group-of", "\(getpgrp())"])
  say(status == 0 ? "same group" : "own group")
  exit(0)
case (3, "group-of"):
  exit(Int32(arguments[2]) == getpgrp() ? 0 : 1)
case (3, "count"), (4, "count"):
  let store =
    arguments[2] == "--file" && arguments.count == 4
    ? DefaultsStore(fileURL: URL(fileURLWithPath: arguments[3])) : DefaultsStore(suiteName: arguments[2])
  guard let store else { exit(64) }
  say("\(store.keys.count)")
  exit(0)
#if os(Linux)
  case (3, "fsize"):
    // Writes past RLIMIT_FSIZE fail with EFBIG (SIGXFSZ ignored): a save that cannot be written whole.
    guard let store = DefaultsStore(suiteName: arguments[2]) else { exit(64) }
    signal(SIGXFSZ, SIG_IGN)
    let key = DefaultsKey<String>("text", default: "")
    store[key] = "small"
    try store.save()
    say("saved")
    _ = readLine()
    var limit = rlimit()
    getrlimit(Int32(RLIMIT_FSIZE.rawValue), &limit)
    let original = limit
    limit.rlim_cur = 1024
    setrlimit(Int32(RLIMIT_FSIZE.rawValue), &limit)
    store[key] = String(repeating: "x", count: 8192)
    do {
      try store.save()
      say("saved despite the limit")
    } catch {
      say("failed: \(error)")
    }
    _ = readLine()
    limit = original
    setrlimit(Int32(RLIMIT_FSIZE.rawValue), &limit)
    try store.save()
    say("saved again")
    exit(0)
  case (3, "many"):
    // Every suite is saved at exit; a save must not need a descriptor per live suite.
    guard let count = Int(arguments[2]) else { exit(64) }
    var limit = rlimit()
    getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
    limit.rlim_cur = 256
    setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
    var stores: [DefaultsStore] = []
    for index in 0..<count {
      guard let store = DefaultsStore(suiteName: "many\(index)") else { exit(1) }
      store[DefaultsKey<Int>("k", default: 0)] = index
      stores.append(store)
    }
    say("written")
    exit(0)
  case (4, "userrace"):
    // Write-then-read rounds while three threads call getpwuid in a loop (corelibs names its copies of a suite by the
    // user's name, which it reads from getpwuid's one buffer): prints "STALE ROUNDS", the reads that did not give the
    // value just written.
    guard let store = DefaultsStore(suiteName: arguments[2]), let rounds = Int(arguments[3]) else { exit(64) }
    let key = DefaultsKey<Int>("round", default: 0)
    store[key] = 0
    try store.save()
    let stop = Atomic<Bool>(false)
    let stopped = DispatchGroup()
    for _ in 0..<3 {
      stopped.enter()
      Thread {
        while !stop.load(ordering: .relaxed) { _ = getpwuid(0) }
        stopped.leave()
      }.start()
    }
    var stale = 0
    for round in 1...rounds {
      store[key] = round
      if store[key] != round { stale += 1 }
    }
    stop.store(true, ordering: .relaxed)
    stopped.wait()
    say("\(stale) \(rounds)")
    exit(0)
#endif
default:
  break
}

if arguments.count == 4, arguments[1] == "sweep" {
  // corelibs' synchronize() of DOMAIN also writes OTHER, which has an unsaved change: the flush must wait for
  // OTHER's lock as well.
  guard let saved = DefaultsStore(suiteName: arguments[2]), let other = DefaultsStore(suiteName: arguments[3]) else {
    exit(64)
  }
  let key = DefaultsKey<Int>("k", default: 0)
  other[key] = 1
  saved[key] = 1
  FileHandle.standardOutput.write(Data("written\n".utf8))
  saved.flush()
  FileHandle.standardOutput.write(Data("flushed\n".utf8))
  exit(0)
}
guard arguments.count == 5, let store = DefaultsStore(suiteName: arguments[2]), let value = Int(arguments[4]) else {
  FileHandle.standardError.write(
    Data("usage: rdefaults-test-helper flush|noflush|exit|write DOMAIN KEY INT\n".utf8))
  exit(64)
}
let key = DefaultsKey<Int>(arguments[3], default: 0)
store[key] = value
switch arguments[1] {
case "flush":
  store.flush()
  say("ready")
case "noflush":
  say("written")
case "exit":
  // A normal exit right after the write, before the coalesced save: the save at exit must keep it.
  exit(0)
case "write":
  store.flush()
  say("\(DispatchTime.now().uptimeNanoseconds)")
  exit(0)
default:
  exit(64)
}
dispatchMain()
