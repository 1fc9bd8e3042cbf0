import '../../src/ui/styles.css';
import { startOptions } from '../../src/ui/options-main.ts';

startOptions();
