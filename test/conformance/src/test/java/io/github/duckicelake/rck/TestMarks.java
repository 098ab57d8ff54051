package io.github.duckicelake.rck;

import java.util.Optional;
import org.junit.platform.engine.TestExecutionResult;
import org.junit.platform.engine.TestSource;
import org.junit.platform.engine.support.descriptor.ClassSource;
import org.junit.platform.engine.support.descriptor.MethodSource;
import org.junit.platform.launcher.TestExecutionListener;
import org.junit.platform.launcher.TestIdentifier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Writes a mark into the kit's log when a test or test class starts and ends, so that
 * report.py can tell which HTTP exchanges (logged by the same single-threaded run into the
 * same log) belong to which test, and so which route a failing test failed on.
 *
 * <p>Mark lines: {@code RCK-MARK <START|END> <kind> <status> <class> <name>}, tab-separated,
 * where name is the legacy reporting name the JUnit XML report uses for the test case.
 */
public final class TestMarks implements TestExecutionListener {
  private static final Logger LOG = LoggerFactory.getLogger("rck.marks");

  @Override
  public void executionStarted(TestIdentifier id) {
    mark("START", id, "-");
  }

  @Override
  public void executionFinished(TestIdentifier id, TestExecutionResult result) {
    mark("END", id, result.getStatus().name());
  }

  @Override
  public void executionSkipped(TestIdentifier id, String reason) {
    mark("END", id, "SKIPPED");
  }

  private static void mark(String what, TestIdentifier id, String status) {
    String cls = className(id.getSource());
    if (cls == null) {
      return; // engines and the suite itself
    }
    String kind = id.isTest() ? "test" : "container";
    LOG.info(
        "RCK-MARK\t{}\t{}\t{}\t{}\t{}",
        what,
        kind,
        status,
        cls,
        id.isTest() ? id.getLegacyReportingName() : id.getDisplayName());
  }

  private static String className(Optional<TestSource> source) {
    if (source.isEmpty()) {
      return null;
    }
    TestSource s = source.get();
    if (s instanceof MethodSource) {
      return ((MethodSource) s).getClassName();
    }
    if (s instanceof ClassSource) {
      return ((ClassSource) s).getClassName();
    }
    return null;
  }
}
