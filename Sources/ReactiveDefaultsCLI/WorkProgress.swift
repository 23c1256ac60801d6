import Dispatch
import Foundation
@_spi(Tools) import ReactiveDefaults
import Synchronization

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// A progress line on standard error for an import or export that takes more than a second, when standard error is
/// a terminal: one line, updated in place twice a second, with the phase, the share done, the keys per second and
/// the time left for the phases that count keys (merging, encoding), and the time spent so far for those that cannot
/// (reading, parsing, sorting, writing, loading). Nothing of it when standard error is not a terminal.
/// `RDEFAULTS_PROGRESS_AFTER` (seconds, default 1) sets when the line first shows.
final class WorkProgress: Sendable {
  /// The command whose work is shown: it names the last line ("Imported 3 keys.").
  enum Work: String, Sendable {
    case imported = "Imported"
    case exported = "Exported"
  }

  /// What the command is doing.
  enum Phase: Sendable, Equatable {
    case reading
    case parsing
    case library(DefaultsStore.WorkPhase)

    var title: String {
      switch self {
      case .reading: "Reading the file"
      case .parsing: "Parsing the file"
      case .library(.merging): "Merging the keys"
      case .library(.sorting): "Sorting the keys"
      case .library(.encoding): "Writing the keys as XML"
      case .library(.writing): "Writing the file"
      case .library(.loading): "Loading the new file"
      }
    }
  }

  private struct State {
    var phase = Phase.reading
    var done = 0
    var total = 0
    var phaseStart = DispatchTime.now()
    var keys: Int?
    var succeeded = false
    var shown = false
    var finished = false
  }

  private let work: Work
  private let state = Mutex(State())
  private let timer = Mutex<(any DispatchSourceTimer)?>(nil)

  init(_ work: Work) {
    self.work = work
    guard isatty(STDERR_FILENO) == 1 else { return }
    let after = ProcessInfo.processInfo.environment["RDEFAULTS_PROGRESS_AFTER"].flatMap(Double.init) ?? 1
    timer.withLock { timer in
      let source = DispatchSource.makeTimerSource(queue: .global())
      source.schedule(deadline: .now() + max(0, after), repeating: 0.5)
      source.setEventHandler { [weak self] in self?.show() }
      source.resume()
      timer = source
    }
  }

  /// The work is now in `phase`, `done` of `total` units into it (0 in all: it cannot count).
  func update(_ phase: Phase, done: Int = 0, of total: Int = 0) {
    state.withLock { state in
      if state.phase != phase {
        state.phase = phase
        state.phaseStart = .now()
      }
      (state.done, state.total) = (done, total)
    }
  }

  /// The number of keys imported or exported, once known.
  func counted(_ keys: Int) {
    state.withLock { $0.keys = keys }
  }

  /// The work succeeded.
  func succeeded() {
    state.withLock { $0.succeeded = true }
  }

  /// Shows the line (written under the state's lock, so that no line can follow ``finish()``'s).
  private func show() {
    state.withLock { state in
      guard !state.finished else { return }
      state.shown = true
      let seconds = Double(DispatchTime.now().uptimeNanoseconds - state.phaseStart.uptimeNanoseconds) / 1e9
      let line = Self.line(state.phase, done: state.done, of: state.total, seconds: seconds)
      RDefaults.writeAll(Data(("\r\u{1B}[K" + line).utf8), to: STDERR_FILENO)
    }
  }

  /// The progress line of a phase `seconds` into it: the share done, the rate and the time left when it counts
  /// units and has done some, else the time so far.
  static func line(_ phase: Phase, done: Int, of total: Int, seconds: Double) -> String {
    guard total > 0, done > 0, seconds > 0 else { return "\(phase.title)… \(Int(seconds)) s" }
    let rate = Double(done) / seconds
    let left = Double(total - done) / max(rate, 1)
    return "\(phase.title): \(done) of \(total) keys (\(done * 100 / total)%), \(Int(rate)) keys/s, "
      + "\(Int(left.rounded(.up))) s left"
  }

  /// Stops the line, ending it with the outcome if it was shown (once: a second call shows nothing).
  func finish() {
    timer.withLock { $0 }?.cancel()
    state.withLock { state in
      guard !state.finished else { return }
      state.finished = true
      guard state.shown else { return }
      let last = state.succeeded ? "\(work.rawValue) \(state.keys ?? 0) keys.\n" : ""
      RDefaults.writeAll(Data(("\r\u{1B}[K" + last).utf8), to: STDERR_FILENO)
    }
  }
}
