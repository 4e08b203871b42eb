// Oracle answers cron questions with real Quartz, for jobdrop's witness
// test (task/quartz_witness_test.go). It is launched as
//
//	java -cp /usr/share/java/quartz2.jar Oracle.java
//
// and reads one question per line on stdin: a time zone, a base time in
// epoch milliseconds, a count and a Quartz cron expression, separated by
// tabs. It first prints "MAX_YEAR n" (Quartz gives up past that year), then
// one answer per question: "OK" followed by the next fire times in epoch
// milliseconds, each from the one before (getNextValidTimeAfter), or "ERR"
// and the reason Quartz refuses the expression.
import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.util.Date;
import java.util.TimeZone;
import org.quartz.CronExpression;

public class Oracle {
  public static void main(String[] args) throws Exception {
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    PrintWriter out = new PrintWriter(new BufferedWriter(new OutputStreamWriter(System.out, StandardCharsets.UTF_8)));
    out.println("MAX_YEAR " + CronExpression.MAX_YEAR);
    String line;
    while ((line = in.readLine()) != null) {
      String[] f = line.split("\t", 4);
      StringBuilder answer = new StringBuilder("OK");
      try {
        CronExpression cron = new CronExpression(f[3]);
        cron.setTimeZone(TimeZone.getTimeZone(f[0]));
        Date at = new Date(Long.parseLong(f[1]));
        int n = Integer.parseInt(f[2]);
        for (int i = 0; i < n; i++) {
          at = cron.getNextValidTimeAfter(at);
          if (at == null) {
            break;
          }
          answer.append(' ').append(at.getTime());
        }
      } catch (Exception e) {
        answer.setLength(0);
        answer.append("ERR ").append(String.valueOf(e.getMessage()).replace('\n', ' '));
      }
      out.println(answer);
    }
    out.flush();
  }
}
