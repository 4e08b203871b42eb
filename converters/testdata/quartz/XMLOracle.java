import java.util.Date;
import java.util.Properties;

import org.quartz.Job;
import org.quartz.JobExecutionContext;
import org.quartz.Scheduler;
import org.quartz.Trigger;
import org.quartz.TriggerKey;
import org.quartz.impl.StdSchedulerFactory;
import org.quartz.impl.matchers.GroupMatcher;
import org.quartz.simpl.CascadingClassLoadHelper;
import org.quartz.xml.XMLSchedulingDataProcessor;

/**
 * Loads job scheduling data files with Quartz's own XMLSchedulingDataProcessor,
 * each into an in-memory scheduler that is never started, and prints, per
 * trigger, its key and its next N fires after each base time (epoch ms):
 *
 *   java -cp quartz2.jar:jaxb-api.jar:slf4j-api.jar:slf4j-nop.jar XMLOracle.java FILE[,FILE...] N BASE...
 *
 * prints "FILE path", then per trigger "TRIGGER group.name" and one line per
 * base: "BASE ms fire fire ...". A file Quartz refuses prints "ERR message".
 */
public class XMLOracle {
    /** The job class the XML names: the test writes it in place of the file's. */
    public static class NoopJob implements Job {
        public void execute(JobExecutionContext context) {}
    }

    public static void main(String[] args) throws Exception {
        Thread.currentThread().setContextClassLoader(XMLOracle.class.getClassLoader());
        int n = Integer.parseInt(args[1]);
        String[] files = args[0].split(",");
        StringBuilder out = new StringBuilder();
        for (int f = 0; f < files.length; f++) {
            out.append("FILE ").append(files[f]).append('\n');
            load(files[f], "XMLOracle" + f, n, args, out);
        }
        System.out.print(out);
    }

    static void load(String file, String instance, int n, String[] args, StringBuilder out) throws Exception {
        Properties p = new Properties();
        p.setProperty("org.quartz.scheduler.instanceName", instance);
        p.setProperty("org.quartz.threadPool.threadCount", "1");
        p.setProperty("org.quartz.jobStore.class", "org.quartz.simpl.RAMJobStore");
        p.setProperty("org.quartz.scheduler.skipUpdateCheck", "true");
        Scheduler sched = new StdSchedulerFactory(p).getScheduler();
        try {
            CascadingClassLoadHelper clh = new CascadingClassLoadHelper();
            clh.initialize();
            XMLSchedulingDataProcessor proc = new XMLSchedulingDataProcessor(clh);
            try {
                proc.processFileAndScheduleJobs(file, sched);
            } catch (Exception e) {
                Throwable c = e;
                while (c.getCause() != null) c = c.getCause();
                out.append("ERR ").append(String.valueOf(c.getMessage()).replace('\n', ' ')).append('\n');
                return;
            }
            for (String group : sched.getTriggerGroupNames()) {
                for (TriggerKey key : sched.getTriggerKeys(GroupMatcher.triggerGroupEquals(group))) {
                    Trigger t = sched.getTrigger(key);
                    out.append("TRIGGER ").append(key.getGroup()).append('.').append(key.getName()).append('\n');
                    for (int i = 2; i < args.length; i++) {
                        long base = Long.parseLong(args[i]);
                        out.append("BASE ").append(base);
                        Date after = new Date(base);
                        for (int k = 0; k < n; k++) {
                            Date next = t.getFireTimeAfter(after);
                            if (next == null) break;
                            out.append(' ').append(next.getTime());
                            after = next;
                        }
                        out.append('\n');
                    }
                }
            }
        } finally {
            sched.shutdown(false);
        }
    }
}
